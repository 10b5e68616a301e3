"""The YAML loader: libyaml's parser where PyYAML has it (an inventory of 10,000 hosts
took 2 s with the pure-Python one), and every refusal of bringup.core.yamlio holding on each parser:
duplicate keys named with both lines, the alias and merge caps, nesting too deep, the size cap,
non-UTF-8 text, the !vault tag. Each test runs the real loader over a real file or text."""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from bringup.core import yamlio
from bringup.core.credentials import VaultText
from bringup.inventory.rack import load_rack
from tests.paths import REPO
from tests.unit.bringup.inventory.test_rack_hostile import BOMB, HEAD, write

LOADERS = pytest.mark.parametrize("loader", yamlio.LOADERS, ids=lambda c: c.__name__)


@pytest.fixture
def invdir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("TEST_BMC_PASSWORD", "x")
    shutil.copytree(REPO / "inventories" / "profiles", tmp_path / "profiles")
    return tmp_path


@pytest.fixture
def use(monkeypatch):
    """Make load_yaml_text use the given loader class (both are real parsers)."""
    return lambda loader: monkeypatch.setattr(yamlio, "LOADER", loader)


def in_child(loader: type, code: str, timeout: int = 60) -> subprocess.CompletedProcess:
    """Run ``code`` in a child whose load_yaml_text uses ``loader``, with 1 GiB of address space:
    a parser that crashes or blows up takes the child down, not the test run."""
    head = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
        f"from bringup.core import yamlio; yamlio.LOADER = getattr(yamlio, {loader.__name__!r});"
    )
    return subprocess.run(
        [sys.executable, "-c", head + code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={"TEST_BMC_PASSWORD": "x"},
    )


def test_libyaml_parses_when_pyyaml_has_it():
    # PyYAML is installed with libyaml here (the wheel bundles it); without it the pure loader.
    if yaml.__with_libyaml__:
        from yaml._yaml import CParser

        assert yamlio.LOADER is yamlio.CLoader and issubclass(yamlio.LOADER, CParser)
        assert [yamlio.CLoader, yamlio.PureLoader] == yamlio.LOADERS
    else:
        assert [yamlio.PureLoader] == yamlio.LOADERS
    # Through load_yaml_text: libyaml words this parse error its own way ("did not find
    # expected '-' indicator"; PyYAML: "expected <block end>, but found '?'").
    with pytest.raises(yamlio.YamlError, match="line 2, column 1") as err:
        yamlio.load_yaml_text("- a\nb: 1\n", "x.yml")
    assert ("did not find expected" in str(err.value)) == yaml.__with_libyaml__, err.value


@pytest.mark.parametrize(
    "path",
    sorted(p.relative_to(REPO) for p in (REPO / "inventories").rglob("*.yml")),
    ids=str,
)
def test_both_loaders_read_the_repositorys_yaml_alike(path):
    text = (REPO / path).read_text()
    loaded = []
    for loader in yamlio.LOADERS:
        data = yaml.load(text, Loader=loader)  # noqa: S506 - the safe loaders
        loaded.append((data, _types(data)))
    assert all(x == loaded[0] for x in loaded), path


def _types(data):
    """The value with each scalar's type beside it (1 == 1.0 == True in a plain comparison)."""
    if isinstance(data, dict):
        return {k: _types(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_types(v) for v in data]
    return (type(data).__name__, data)


@LOADERS
def test_duplicate_key_named_with_both_lines(invdir, use, loader):
    use(loader)
    write(
        invdir,
        HEAD + "  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}\n"
        "    gpu001: {bmc_address: 10.1.0.2, rack_unit: 2}\n",
    )
    rack, problems = load_rack("r09", invdir)
    text = " ".join(str(p) for p in problems)
    assert rack is None and "r09.yml" in text and "duplicate key 'gpu001' (lines 9 and 10)" in text, text


@LOADERS
def test_alias_bomb_refused_in_bounded_memory(invdir, loader):
    write(invdir, HEAD + BOMB + "  hosts:\n    gpu001: {bmc_address: *i, rack_unit: 1}\n")
    proc = in_child(
        loader,
        "from pathlib import Path; from bringup.inventory.rack import load_rack;"
        f"r, p = load_rack('r09', Path({str(invdir)!r})); print('\\n'.join(map(str, p)))",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "alias bomb" in proc.stdout and "r09.yml" in proc.stdout, proc.stdout


@LOADERS
def test_merge_bomb_refused(use, loader):
    # Each level merges the one below twice: 2^21 keys after flattening, from 22 short lines.
    lines = ["l0: &l0 {a: 1, b: 2}"]
    lines += [f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}], k{i}: 1}}" for i in range(1, 22)]
    use(loader)
    try:
        doc = yamlio.load_yaml_text("\n".join(lines) + "\n", "m.yml")
    except yamlio.YamlError as exc:  # PyYAML up to 6.0.3 walks every merge: 2^21 keys
        assert "alias" in str(exc) or "merges" in str(exc), exc
    else:  # 6.0.4 flattens each merged mapping once: no bomb left to refuse, and the right keys
        assert sorted(doc["l21"]) == sorted(["a", "b", *(f"k{i}" for i in range(1, 22))])


@LOADERS
def test_nesting_too_deep_is_an_error_not_a_crash(loader):
    # 100,000 '[' (200 KB): yaml.CSafeLoader's C composer overflows the stack here (SIGSEGV).
    proc = in_child(
        loader,
        "n = 100_000\ntry:\n yamlio.load_yaml_text('[' * n + ']' * n, 'deep.yml')\n"
        "except yamlio.YamlError as exc:\n print(exc)",
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    # Ours, or libyaml's own limit (PyYAML 6.0.4's wheel): either way an error naming the place.
    assert "nested too deeply" in proc.stdout or "maximum nesting depth" in proc.stdout, proc.stdout


@LOADERS
def test_size_and_encoding_refused_naming_the_file(invdir, use, loader):
    use(loader)
    big = write(invdir, HEAD + "# " + "x" * yamlio.MAX_YAML_BYTES + "\n", name="big")
    rack, problems = load_rack("big", invdir)
    assert rack is None and "8 MiB" in problems[0].message and problems[0].file == str(big)
    bad = invdir / "r09.yml"
    bad.write_bytes(textwrap.dedent(HEAD).encode() + b"    note: caf\xe9\n")
    rack, problems = load_rack("r09", invdir)
    assert rack is None and problems[0].file == str(bad)
    assert "not UTF-8 text (byte 0xe9 at offset" in problems[0].message, problems


@LOADERS
def test_vault_values_load_and_plaintext_secrets_are_named(invdir, use, loader):
    use(loader)
    vault = "!vault |\n      $ANSIBLE_VAULT;1.1;AES256\n      6162636465\n"
    data = yamlio.load_yaml_text(f"pw: {vault}u: !unsafe '{{{{ x }}}}'\n", "v.yml")
    assert isinstance(data["pw"], VaultText) and data["pw"].ciphertext.startswith("$ANSIBLE_VAULT")
    assert data["u"] == "{{ x }}"
    write(
        invdir,
        HEAD + "  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1, ipmi_passphrase: hunter2}\n",
    )
    rack, problems = load_rack("r09", invdir)
    text = " ".join(str(p) for p in problems)
    assert rack is None and "gpu001" in text and "ipmi_passphrase" in text and "hunter2" not in text, text


@LOADERS
def test_malformed_yaml_names_line_and_column(use, loader):
    use(loader)
    with pytest.raises(yamlio.YamlError, match=r"malformed YAML at line 3, column 3"):
        yamlio.load_yaml_text("a:\n  - 1\n  b: 2\n", "x.yml")


def test_garbage_collection_is_back_on_after_a_load():
    assert yamlio.load_yaml_text("a: [1, 2]\n", "x.yml") == {"a": [1, 2]}
    assert gc.isenabled()
    with pytest.raises(yamlio.YamlError):
        yamlio.load_yaml_text("a: [1, 2\n", "x.yml")
    assert gc.isenabled()

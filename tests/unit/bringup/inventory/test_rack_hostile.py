"""Hostile or careless inventories. Each defect reproduced on the code before the fix:
provisioning settings injected into dnsmasq/iPXE, a host defined twice, a YAML alias bomb,
an oversized or non-UTF-8 file, more secret-like variable names written in plaintext."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.core import yamlio
from bringup.core.yamlio import YamlError, load_yaml_file
from bringup.inventory.rack import load_rack
from tests.paths import REPO

HEAD = """
all:
  vars:
    profile: h100-sxm-8x400g
    bmc_vendor: dell
    bmc_username: root
    bmc_password: env:TEST_BMC_PASSWORD
"""


@pytest.fixture
def invdir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("TEST_BMC_PASSWORD", "x")
    shutil.copytree(REPO / "inventories" / "profiles", tmp_path / "profiles")
    return tmp_path


def write(invdir: Path, text: str, name: str = "r09") -> Path:
    path = invdir / f"{name}.yml"
    path.write_text(textwrap.dedent(text))
    return path


def check(invdir: Path, rack: str = "r09") -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--inventory-dir", str(invdir), "inventory", "check", rack])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


# -- provisioning settings: each injection string from the issue ---------------------------------

INJECTIONS = [
    ("pxe_domain", "lab.example\ndhcp-script=/tmp/evil.sh"),
    ("pxe_domain", "lab.example\nconf-dir=/tmp/evil"),
    ("pxe_router", "10.20.0.254\ndhcp-script=/tmp/evil.sh"),
    ("pxe_dns_servers", "10.20.0.53\nconf-dir=/tmp/evil"),
    ("pxe_install_iso", "http://mirror.example/u.iso\nchain http://elsewhere/"),
]


@pytest.mark.parametrize(
    ("key", "value"), INJECTIONS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(INJECTIONS)]
)
def test_inventory_check_refuses_each_injection_in_rack_vars(invdir, key, value):
    write(
        invdir,
        HEAD
        + f"    {key}: {json.dumps(value)}\n"
        + "  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}\n",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    hits = [p for p in problems if p.field and p.field.startswith(key) and not p.warning]
    assert hits and "control character" in hits[0].message, problems
    assert hits[0].file.endswith("r09.yml")
    code, out = check(invdir)
    assert code == 1 and key in out


def test_injection_in_host_vars_names_the_host(invdir):
    write(
        invdir,
        HEAD
        + '  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1, pxe_domain: "x.example\\nconf-dir=/tmp"}\n',
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    assert any(p.host == "gpu001" and p.field == "pxe_domain" for p in problems), problems


def test_control_character_anywhere_is_an_error(invdir):
    write(
        invdir,
        HEAD
        + '    motd: "hello\\x1b[2Jworld"\n  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}\n',
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    assert any(p.field and p.field.startswith("motd") and "control character" in p.message for p in problems)


def test_wrongly_typed_provisioning_setting_is_an_inventory_error(invdir):
    write(
        invdir,
        HEAD + "    pxe_router: 10.20.0.300\n  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}\n",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    assert any(p.field and p.field.startswith("pxe_router") for p in problems), problems


# -- a host defined twice -------------------------------------------------------------------------


def test_host_defined_in_two_groups_is_an_error_naming_both(invdir):
    write(
        invdir,
        HEAD
        + """
  children:
    a:
      hosts:
        gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}
    b:
      hosts:
        gpu001: {bmc_address: 10.1.0.2, rack_unit: 2}
""",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    msgs = [str(p) for p in problems if p.host == "gpu001" and not p.warning]
    assert any("group a" in m and "group b" in m for m in msgs), problems


def test_host_listed_again_without_variables_is_only_membership(invdir):
    write(
        invdir,
        HEAD
        + """
  children:
    a:
      hosts:
        gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}
    h100:
      hosts:
        gpu001:
""",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is not None, problems


def test_duplicate_key_in_one_mapping_is_an_error_naming_both_lines(invdir):
    write(
        invdir,
        HEAD
        + """
  hosts:
    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}
    gpu001: {bmc_address: 10.1.0.2, rack_unit: 2}
""",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    text = " ".join(str(p) for p in problems)
    assert "gpu001" in text and "duplicate" in text and "lines 10 and 11" in text, text


# -- alias bomb, file size, encoding ----------------------------------------------------------------

BOMB = """
    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
    b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
    c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
    d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
    e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
    f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
    g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
    h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
    i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_alias_bomb_is_refused_quickly_with_a_clear_error(invdir):
    # Run in a child with a 1 GiB address-space cap: before the fix this took 36 s and 2.2 GB.
    write(invdir, HEAD + BOMB + "  hosts:\n    gpu001: {bmc_address: *i, rack_unit: 1}\n")
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
        "from pathlib import Path; from bringup.inventory.rack import load_rack;"
        f"r, p = load_rack('r09', Path({str(invdir)!r})); print('\\n'.join(map(str, p)))"
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"TEST_BMC_PASSWORD": "x"},
    )
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "alias" in proc.stdout and "r09.yml" in proc.stdout, proc.stdout
    assert took < 10


def test_legitimate_anchors_still_work(invdir):
    write(
        invdir,
        HEAD
        + """
  hosts:
    gpu001: &common {bmc_address: 10.1.0.1, rack_unit: 1}
    gpu002: {<<: *common, bmc_address: 10.1.0.2, rack_unit: 2}
""",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is not None, problems


def test_oversized_inventory_is_refused_naming_the_limit(invdir):
    path = write(invdir, HEAD + "  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}\n")
    with path.open("a") as f:
        f.write("# " + "x" * yamlio.MAX_YAML_BYTES + "\n")
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    assert "MiB" in problems[0].message and problems[0].file.endswith("r09.yml"), problems


def test_non_utf8_inventory_error_names_the_file(invdir):
    path = invdir / "r09.yml"
    path.write_bytes(
        textwrap.dedent(HEAD).encode()
        + b"    note: caf\xe9\n  hosts:\n    gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}\n"
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None and "UTF-8" in problems[0].message and problems[0].file == str(path)
    code, out = check(invdir)
    assert code == 1 and str(path) in out and "Traceback" not in out
    with pytest.raises(YamlError, match="UTF-8"):
        load_yaml_file(path)


# -- secret-like names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "bmc_pw",
        "ipmi_credential",
        "redfish_auth_token_value",
        "api_auth",
        "ipmi_passphrase",
        "ldap_credentials",
    ],
)
def test_more_secret_like_names_in_plaintext_are_flagged(invdir, key):
    write(
        invdir, HEAD + f"    {key}: hunter2\n  hosts:\n    gpu001: {{bmc_address: 10.1.0.1, rack_unit: 1}}\n"
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    hits = [p for p in problems if p.field and p.field.startswith(key)]
    assert hits and "hunter2" not in str(hits[0]), problems


@pytest.mark.parametrize("key", ["pxe_ssh_authorized_keys", "ssh_authorized_keys", "author"])
def test_names_that_only_look_secret_are_not_flagged(invdir, key):
    write(invdir, HEAD + f"    {key}: plain\n  hosts:\n    gpu001: {{bmc_address: 10.1.0.1, rack_unit: 1}}\n")
    rack, problems = load_rack("r09", invdir)
    assert not [p for p in problems if "plaintext" in p.message], problems

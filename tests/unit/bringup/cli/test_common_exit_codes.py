"""The exit codes the README documents are the ones the commands return: the table is read from
README.md, and each code is checked against cases that must return it. Before the fix a gate
refusal exited 2 with click's usage banner (configure) or 1 (burnin run), `--stages bogus` exited
2 in `burnin golden` and 1 in `burnin run` and `burnin nightly`, and `provision --dry-run` exited
0 when it could plan no node."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli import common
from bringup.cli.main import main as bringup_main
from bringup.fleet.store import FleetStore
from burnin.cli import main as burnin_main
from tests.inventories import write_rack
from tests.paths import REPO


def documented_codes() -> dict[int, str]:
    """Code -> meaning, from the README's exit-code table."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| *(\d+) *\| *([^|]+?) *\|", section, re.M)
    assert rows, "README.md has no exit-code table under '## Exit codes'"
    return {int(code): meaning for code, meaning in rows}


def test_the_readme_table_is_the_codes_the_commands_use():
    assert set(documented_codes()) == set(common.EXIT_CODES)


@pytest.fixture
def rack(tmp_path: Path) -> tuple[Path, str]:
    hosts = {
        f"gpu{i}": {"bmc_address": f"10.0.0.{i}", "rack_unit": i, "ansible_host": f"10.20.0.{i}"}
        for i in (1, 2)
    }
    inv = write_rack(tmp_path / "inventories", "r09", hosts)
    db = str(tmp_path / "fleet.db")
    bad = (inv / "r09.yml").read_text().replace("rack_unit: 2", "rack_unit: -2")
    (inv / "bad.yml").write_text(bad)
    assert "rack_unit: -2" in bad  # a rack whose inventory has an error
    store = FleetStore.open(db)
    for i in (1, 2):
        store.enroll(f"gpu{i}", "r09", "h100-sxm-8x400g", rack_unit=i)  # enrolled: no step may start
    store.close()
    return inv, db


def _run(program, rack: tuple[Path, str], *args: str):
    inv, db = rack
    res = CliRunner().invoke(program, ["--db", db, "--inventory-dir", str(inv), *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


CASES = {
    "inventory check of a valid rack": (0, bringup_main, ["inventory", "check", "r09"]),
    "inventory check of a missing rack": (1, bringup_main, ["inventory", "check", "r77"]),
    "a node the store does not have": (1, bringup_main, ["nodes", "show", "gpu77"]),
    "configure of a rack whose inventory has errors": (1, bringup_main, ["configure", "--rack", "bad"]),
    "burnin golden of a rack whose inventory has errors": (1, burnin_main, ["golden", "--rack", "bad"]),
    "burnin run of a rack whose inventory has errors": (1, burnin_main, ["run", "--rack", "bad"]),
    "an unknown option": (2, bringup_main, ["nodes", "list", "--bogus"]),
    "burnin run --stages bogus": (2, burnin_main, ["run", "--rack", "r09", "--stages", "bogus"]),
    "burnin golden --stages bogus": (2, burnin_main, ["golden", "--rack", "r09", "--stages", "bogus"]),
    "burnin nightly --stages bogus": (2, burnin_main, ["nightly", "--rack", "r09", "--stages", "bogus"]),
    "burnin health without its profile": (3, burnin_main, ["health", "--profile", "/nonexistent.yml"]),
    "configure, every node refused by the gate": (4, bringup_main, ["configure", "--rack", "r09"]),
    "burnin run, every node refused by the gate": (4, burnin_main, ["run", "--rack", "r09"]),
    "provision --dry-run that can plan no node": (
        1,
        bringup_main,
        ["provision", "--rack", "r09", "--dry-run"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_case_returns_its_documented_code(rack, case):
    code, program, args = CASES[case]
    if case.startswith("provision"):  # discovered, so the gate admits them; no pxe_* settings
        from tests.fleet import walk_to

        store = FleetStore.open(rack[1])
        for i in (1, 2):  # as discovery leaves them: a serial and the onboard NIC's MAC
            walk_to(store, f"gpu{i}", "discovered")
            mac = f"02:00:00:00:00:0{i}"
            nics = [{"mac": mac, "onboard": True, "link": "up"}]
            store.update_node(f"gpu{i}", serial=f"S{i}", macs=[mac], hardware={"nics": nics})
        store.close()
    res = _run(program, rack, *args)
    assert code in documented_codes()
    assert res.exit_code == code, f"{case}: exit {res.exit_code}, documented {code}\n{res.output}"
    if code in (1, 3, 4):  # said on one line, no usage banner
        assert "Usage:" not in res.output, res.output
    if code == 4:
        assert [x for x in res.output.splitlines() if x.startswith("error:")], res.output


def test_an_internal_error_is_70(rack, monkeypatch, tmp_path):
    import bringup.cli.fleet as fleet_cli

    monkeypatch.setenv("BRINGUP_LOG_DIR", str(tmp_path / "log"))
    monkeypatch.setattr(fleet_cli, "load_rack", lambda *a, **k: 1 / 0)
    res = _run(bringup_main, rack, "inventory", "check", "r09")
    assert res.exit_code == common.EXIT_INTERNAL_ERROR == 70 and 70 in documented_codes()


def test_every_documented_code_has_a_case():
    covered = {code for code, _, _ in CASES.values()} | {70, 130}  # 130: Ctrl-C, by the shell's rule
    assert set(documented_codes()) <= covered

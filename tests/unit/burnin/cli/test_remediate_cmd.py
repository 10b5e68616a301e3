"""`burnin remediate` from the command line, with a stand-in `sinfo` on PATH and stand-in edges:
refused without the opt-in, the plan on --dry-run, the action with --enable."""

from __future__ import annotations

import json
import os
import stat

from click.testing import CliRunner

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.cli import main
from burnin.service import remediate
from tests.inventories import write_rack

GOLDEN_PATH = (
    State.DISCOVERED,
    State.PROVISIONING,
    State.PROVISIONED,
    State.CONFIGURED,
    State.BURNIN,
    State.GOLDEN,
)
# sinfo -N -h -o '%N|%T|%U|%H|%E', as Slurm 22.05.8 prints it (tests/fixtures/slurm-capture.md)
SINFO = "gpu001|drained|root(0)|2026-11-24T06:41:04|bringup: kernel_log: GPU 3: Xid 79, fallen off the bus\n"


def setup(tmp_path, monkeypatch):
    inv = write_rack(tmp_path / "inv", "r01", {"gpu001": {"bmc_address": "10.9.1.1", "rack_unit": 1}})
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.enroll("gpu001", "r01", "h100-sxm-8x400g")
    for target in GOLDEN_PATH:
        store.transition("gpu001", target, "test")
    finding = {"message": "GPU 3: Xid 79", "severity": "critical", "action": "REBOOT", "subject": "GPU 3"}
    store.add_result("gpu001", "health", "kernel_log", "FAIL", findings=[finding])
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text(f"#!/bin/sh\ncat <<'EOF'\n{SINFO}EOF\n")
    (bin_dir / "sinfo").chmod(0o755 | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    calls = []

    def edges(_store, _rack):
        def act(rung):
            return lambda node: calls.append((rung, node)) or remediate.Outcome(True, f"stand-in {rung}")

        return remediate.Edges(act("reset_gpu"), act("reconfigure"), act("power_cycle"))

    monkeypatch.setattr(remediate, "default_edges", edges)
    argv = ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(inv), "remediate", "--rack", "r01"]
    return store, argv, calls


def test_refused_without_opt_in_then_planned_then_done(tmp_path, monkeypatch):
    store, argv, calls = setup(tmp_path, monkeypatch)
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 1 and "remediation is opt-in" in res.output, res.output
    assert calls == [] and store.get_node("gpu001").state == "failed"

    res = CliRunner().invoke(main, [*argv, "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert (
        plan["dry_run"]
        and plan["nodes"][0]["decision"] == "act"
        and plan["nodes"][0]["rung"] == "power_cycle"
    )
    assert calls == []

    res = CliRunner().invoke(main, [*argv, "--enable"])
    assert res.exit_code == 0, res.output
    assert calls == [("power_cycle", "gpu001")]
    assert "power_cycle done: stand-in power_cycle" in res.stdout
    assert store.get_node("gpu001").state == "repair"

"""A fault a reboot clears, remediated with no person involved, on the virtual rack with its real
Slurm (slurmctld on the host, slurmd in every node) and its Redfish BMCs, through the real CLIs.

Three nodes are burnt in (preflight) and made golden, and slurmd runs `burnin health` as its
HealthCheckProgram, as the burnin_tools role wires it (tests/lab/test_service_lab.py). Then
`bringup lab fault node02 add xid-79` (a GPU fell off the bus), and nobody touches anything:

- slurmd's health check drains node02 on its Xid 79; `burnin sync` fails it;
- `burnin remediate --enable` climbs the ladder to the finding's action (REBOOT: a power cycle
  through node02's BMC), records it as a `remediation` event and moves node02 failed -> repair,
  still drained; the lab BMC's power cycle reboots the node (bringup/lab/reboot.py): the Xid
  leaves the kernel log, the boot id is new, slurmd starts again;
- `burnin nightly` re-tests node02 beside the two golden partners, brings it back golden and
  resumes it in Slurm.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bringup.cli.main import main as bringup_main
from bringup.lab.demo import LAB_SETTINGS
from bringup.lab.state import LabState
from burnin.cli import main as burnin_main
from tests.lab import conftest
from tests.lab.conftest import golden_lab, node_ssh, slurm_nodes
from tests.lab.test_service_lab import NODES, last_health, wire_health_checks

pytestmark = pytest.mark.lab  # its steps walk one rack in order: make test keeps a module on one worker

NODE = "node02"
SETS = [a for s in LAB_SETTINGS for a in ("--set", s)]
WAIT_S = 90


def wait_for(what: str, probe, timeout: float = WAIT_S):
    return conftest.wait_for(what, probe, timeout, poll=1)


def on_node(state, script: str) -> str:
    rc, out, err = node_ssh(state, NODE, script)
    assert rc == 0, err
    return out.strip()


def cursor_boot(state) -> str | None:
    """The boot id of the kernel log `burnin health` last read on the node (its cursor)."""
    from bringup.lab.burnin_install import node_root

    path = node_root(state.state_dir, NODE) / "var/lib/bringup/health/cursor.json"
    try:
        return json.loads(path.read_text()).get("boot_id")
    except (OSError, ValueError):
        return None


def cli(lab, main, *args: str) -> str:
    res = lab["runner"].invoke(main, [*lab["base"], *args])
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_fault_a_reboot_clears_is_remediated_retested_and_resumed_with_no_person(tmp_path_factory):
    with golden_lab(tmp_path_factory, "remediate", "m", NODES) as lab:
        state, store, rack = lab["state"], lab["store"], lab["rack"]
        wire_health_checks(state, lab["root"])
        first = wait_for(f"{NODE}'s first health result", lambda: last_health(state, NODE))
        assert first["verdict"] == "PASS", first
        boot_before = on_node(state, "cat /proc/sys/kernel/random/boot_id")
        slurmd_before = on_node(state, "cat /run/slurmd.pid")
        with open("/proc/sys/kernel/random/boot_id") as f:
            assert boot_before != f.read().strip()  # the node's own, not the host's (nodes.py)
        started = time.monotonic()
        known = len([e for e in store.history(NODE) if e.kind == "transition"])

        # 1. the fault, switched on as an operator rehearsing the loop would
        out = cli(lab, bringup_main, "lab", "fault", NODE, "add", "xid-79", "--name", rack,
                  "--lab-dir", str(lab["root"] / "state"))  # fmt: skip
        assert out.strip().endswith("faults now: xid-79"), out

        # 2. slurmd's health check drains it
        drained = wait_for(
            f"{NODE} drained by its health check", lambda: (n := slurm_nodes(state)[NODE]).drain and n
        )
        assert drained.reason.startswith("bringup: ") and "79" in drained.reason, drained.reason
        t_drain = time.monotonic() - started
        print(f"\nxid-79 on -> DRAIN in {t_drain:.0f} s: {drained.reason}")

        # 3. sync fails it
        synced = json.loads(cli(lab, burnin_main, "sync", "--rack", rack, "--json"))
        row = next(r for r in synced["nodes"] if r["node"] == NODE)
        assert (row["origin"], row["state_before"], row["state_after"]) == ("health", "golden", "failed"), row
        check = row["health"]["failed_check"]
        assert store.get_node(NODE).state == "failed"

        # 4. remediate: the finding says REBOOT, so a power cycle through the BMC, node -> repair
        t0 = time.monotonic()
        done = json.loads(cli(lab, burnin_main, "remediate", "--rack", rack, "--enable", "--json"))
        t_remediate = time.monotonic() - t0
        (acted,) = [r for r in done["nodes"] if r["node"] == NODE]
        print(f"burnin remediate in {t_remediate:.0f} s: {acted}")
        assert (acted["decision"], acted["rung"], acted["check"]) == ("act", "power_cycle", check), acted
        assert acted["done"] == "power_cycle done: power cycle: Off -> On", acted  # lab BMCs start Off
        assert acted["state_after"] == "repair", acted
        assert [r["node"] for r in done["nodes"]] == [NODE]  # the golden nodes are not touched
        assert store.get_node(NODE).state == "repair"
        history = store.history(NODE)
        (event,) = [e for e in history if e.kind == "remediation"]
        assert event.actor == "burnin remediate" and event.details["rung"] == "power_cycle", event.details
        assert event.details["ok"] is True and event.details["check"] == check, event.details
        assert slurm_nodes(state)[NODE].drain  # still out: never straight back

        # ... and the power cycle rebooted it: the Xid is gone, a new boot, slurmd started again
        bmc_log = (Path(state.state_dir) / "bmc" / "bmc.log").read_text().splitlines()
        print("\n".join(line for line in bmc_log if " boot: " in line))
        assert json.loads(on_node(state, "cat /etc/bringup-lab/faults.json")) == {"faults": []}
        assert next(n for n in LabState.load(Path(state.state_dir)).nodes if n.name == NODE).faults == []
        boot_after = on_node(state, "cat /proc/sys/kernel/random/boot_id")
        assert boot_after != boot_before and len(boot_after) == 36
        wait_for(
            "slurmd started again",
            lambda: node_ssh(state, NODE, "cat /run/slurmd.pid")[1].strip() not in ("", slurmd_before),
        )
        assert "Xid" not in on_node(state, "dmesg --time-format iso")
        # slurmd's next health check reads the kernel log of the new boot (its cursor keys on it)
        wait_for(f"{NODE}'s health check on the new boot", lambda: cursor_boot(state) == boot_after)
        after = last_health(state, NODE)
        assert after["verdict"] == "PASS", after
        assert slurm_nodes(state)[NODE].drain  # the health check never resumes

        # 5. the nightly re-tests it beside golden partners and resumes it
        t0 = time.monotonic()
        res = lab["runner"].invoke(burnin_main, [*lab["base"], "nightly", "--rack", rack, *SETS, "--json"])
        t_nightly = time.monotonic() - t0
        summary = json.loads(res.stdout) if res.stdout.strip().startswith("[") else []
        print(f"burnin nightly in {t_nightly:.0f} s")
        print("\n".join(summary[0]["lines"]) if summary else res.output)
        assert res.exit_code == 0, res.output
        by = {r["node"]: r for r in summary[0]["nodes"]}
        assert by[NODE]["role"] == "tested" and by[NODE]["verdict"] in ("PASS", "WARN"), by
        assert (by[NODE]["state_before"], by[NODE]["state_after"], by[NODE]["slurm"]) == (
            "repair",
            "golden",
            "resume",
        )
        partners = sorted(n for n, r in by.items() if r["role"] == "partner")
        assert partners == ["node01", "node03"] and all(by[p]["slurm"] == "resume" for p in partners)
        assert {n: store.get_node(n).state for n in NODES} == dict.fromkeys(NODES, "golden")
        wait_for(f"{NODE} in service", lambda: not slurm_nodes(state)[NODE].drain)
        assert {n: s.label for n, s in slurm_nodes(state).items() if s.drain} == {}

        # no person: every move out and back is sync's, remediate's or the nightly's
        moves = [(e.from_state, e.to_state, e.actor) for e in store.history(NODE) if e.kind == "transition"]
        moves = moves[known:]
        assert moves[0] == ("golden", "failed", "burnin sync"), moves
        assert moves[1] == ("failed", "repair", "burnin remediate"), moves
        assert moves[-1][1:] == ("golden", "burnin nightly"), moves
        assert {actor for _, _, actor in moves} == {"burnin sync", "burnin remediate", "burnin nightly"}, (
            moves
        )
        print(
            f"no person: drain {t_drain:.0f} s after the fault, remediate {t_remediate:.0f} s, "
            f"nightly {t_nightly:.0f} s; moves {moves}"
        )

"""The ib stage's record and its replay: the stage (its network replaced by a simulated fabric
printing real perftest output) keeps in each node's evidence what it judged; judged again
with the same profile it gives the same verdicts, with a raised floor the slow port fails."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from bringup.ssh.fanout import SshTarget
from burnin.checks.base import CommandOutput
from burnin.checks.ib_load import EndOutput, counter_changes
from burnin.checks.ib_replay import RECORD_MARK, parse_record, replay
from burnin.parsers import ParseError
from burnin.plan.ib_pairs import PortKey
from burnin.result import Verdict
from burnin.stages import ib as ib_stage
from burnin.stages.jobs import GroupContext, NodeJob
from tests.paths import REPO
from tests.unit.burnin.parsers._samples import load

PROFILE, _ = load_profile("h100-sxm-8x400g", REPO / "inventories/profiles")
NODES = ["node01", "node02", "node03", "node04"]
SLOW = PortKey("node03", "mlx5_3/1")
# A real ib_write_bw report (392.34 Gb/s one way on NDR), as a bidirectional session's total
# (the stage pairs an even count both ways); the slow port's copy: 380 Gb/s per direction.
ONE_WAY = load("perftest_ndr_cx7_client_send_read_write_bw.txt").split("vyl@csegpu1:~$ ib_write_bw", 1)[1]
WRITE = ONE_WAY.split("\n", 1)[1].replace("392.34", "784.68")
SLOW_WRITE = WRITE.replace("784.68", "760.00")


def ibstat() -> str:
    path = REPO / "bringup/lab/standins/samples/ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt"
    return path.read_text().split("\n", 1)[1]


def run_stage(
    monkeypatch, profile, symbol_errors: PortKey | None = None, switch_errors: PortKey | None = None
):
    """The ib stage over a simulated fabric: every session prints WRITE (SLOW_WRITE on SLOW);
    with ``switch_errors`` every port's far-end switch port is read, that one's symbol errors rise."""

    def fake_discover(targets, bound=None):
        out = {
            "ibstat": CommandOutput(ibstat()),
            "sysfs": CommandOutput(""),
            "perftest": CommandOutput("0\n"),
        }
        found = {n: ib_stage.parse_discovery(n, out) for n in targets}
        if switch_errors is not None:  # cabled to leaf switch LID 2052, one port per HCA port
            for i, d in enumerate(found.values()):
                d.ports = [
                    replace(p, switch_lid=2052, switch_port_number=8 * i + j + 1, switch_name="leaf1")
                    for j, p in enumerate(d.ports)
                ]
        return found

    def fake_run_round(round_, targets, infos, seconds, out_json, bound=None, on_wave=None):
        got = ib_stage.RoundOutputs()
        for s in round_.sessions:
            text = SLOW_WRITE if SLOW in s.ends else WRITE
            got.ends[(s.server, s)] = EndOutput("", "", rc=0)
            got.ends[(s.client, s)] = EndOutput(text, "", rc=0)
        for key in round_.loaded:
            after = {"SymbolErrorCounter": 30} if key == symbol_errors else {}
            got.changes[key] = counter_changes({}, after)
            if switch_errors is not None:
                rise = {"SymbolErrorCounter": 600} if key == switch_errors else {}
                got.switch_changes[key] = counter_changes({"SymbolErrorCounter": 0}, rise or None)
        return got

    monkeypatch.setattr(ib_stage, "discover", fake_discover)
    monkeypatch.setattr(ib_stage, "run_round", fake_run_round)
    jobs = [NodeJob(n, profile, SshTarget(n, f"10.0.0.{i}")) for i, n in enumerate(NODES, 1)]
    return {n: r[0] for n, r in ib_stage.run_ib_stage(GroupContext(jobs, None, {}, lambda _: None)).items()}


def records(results) -> dict:
    return {n: parse_record(evidence) for n, (_, evidence) in results.items()}


LOW = apply_overrides(PROFILE, ["floors.ib_write_bw_fraction=0.9", "diag.ib_rounds=2"])


def test_the_record_rides_at_the_end_of_the_readable_evidence(monkeypatch):
    results = run_stage(monkeypatch, LOW)
    _, evidence = results["node03"]
    assert evidence.index("== ibstat (exit status 0) ==") < evidence.index(RECORD_MARK)
    doc = parse_record(evidence)
    assert doc["node"] == "node03" and len(doc["ports"]) == 8
    # every session of node03's ports, both ends, in each of the 2 rounds
    assert len(doc["sessions"]) == 2 * 8 and all(
        "node03" in json.dumps(s["session"]) for s in doc["sessions"]
    )
    assert any("760.00" in s["client"]["stdout"] for s in doc["sessions"])


def test_replayed_with_the_same_profile_the_verdicts_are_the_stages(monkeypatch):
    for symbol in (None, PortKey("node02", "mlx5_2/1")):
        results = run_stage(monkeypatch, LOW, symbol)
        again = replay(records(results), dict.fromkeys(NODES, LOW))
        for node, (result, _) in results.items():
            assert again[node].verdict is result.verdict, node
            assert again[node].findings == result.findings and again[node].metrics == result.metrics


def test_a_raised_floor_fails_the_port_that_measured_under_it(monkeypatch):
    results = run_stage(monkeypatch, LOW)
    assert {n: r.verdict for n, (r, _) in results.items()} == dict.fromkeys(NODES, Verdict.PASS)
    raised = apply_overrides(LOW, ["floors.ib_write_bw_fraction=0.97"])  # 388 Gb/s: 380 is under it
    again = replay(records(results), dict.fromkeys(NODES, raised))
    assert {n: r.verdict for n, r in again.items()} == {
        "node01": Verdict.PASS,
        "node02": Verdict.PASS,
        "node03": Verdict.FAIL,
        "node04": Verdict.PASS,
    }
    ports = again["node03"].metrics["ports"]
    assert {k for k, v in ports.items() if v["verdict"] != "PASS"} == {"mlx5_3"}
    (finding,) = again["node03"].findings
    assert "380.0 Gb/s" in finding.message and "floor 388 Gb/s" in finding.message


def test_a_floor_above_every_port_blames_nobody_as_the_stage_would(monkeypatch):
    # Everyone under the floor: no partner passes elsewhere, so no port can be blamed (the live
    # stage says the same): each is inconclusive, not passing.
    results = run_stage(monkeypatch, LOW)
    raised = apply_overrides(LOW, ["floors.ib_write_bw_fraction=1.0"])
    again = replay(records(results), dict.fromkeys(NODES, raised))
    assert {r.verdict for r in again.values()} == {Verdict.UNKNOWN}
    assert all("neither end could be blamed" in f.message for f in again["node01"].findings)


def test_evidence_without_a_whole_record_cannot_be_replayed():
    with pytest.raises(ParseError, match="no ib record"):
        parse_record("== ibstat (exit status 0) ==\n...")
    with pytest.raises(ParseError, match="not whole JSON"):
        parse_record(f"{RECORD_MARK}\n" + '{"node": "a", "sessions": [')


def test_the_far_end_switch_counters_are_replayed(monkeypatch):
    bad = PortKey("node02", "mlx5_5/1")
    results = run_stage(monkeypatch, PROFILE, switch_errors=bad)
    result = results["node02"][0]
    (finding,) = [f for f in result.findings if "the HCA end saw none" in f.message]
    assert finding.message.startswith("switch leaf1 (LID 2052) port 14")
    again = replay(records(results), dict.fromkeys(NODES, PROFILE))
    assert again["node02"].verdict is result.verdict is Verdict.FAIL
    assert finding.message in [f.message for f in again["node02"].findings]

"""The nccl stage on an NVL72 profile, end to end against a fake `mpirun` that runs slow as the
simulated racks deserve (a bad switch tray: every run holding a tray of its rack, with multi-node
NVLink on; a bad tray: every run holding it), and the merge of a tray's two passes."""

from __future__ import annotations

import json

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from bringup.ssh.fanout import SshTarget
from burnin.plan.nvlink_blame import RackBlame
from burnin.result import Action, Result, Severity, Verdict, critical
from burnin.stages.jobs import GroupContext, NodeJob
from burnin.stages.nccl import run_nccl_stage
from burnin.stages.nccl_nvlink import merge, rack_label
from tests.paths import REPO
from tests.unit.burnin.stages.nvl72_mpirun import write_fake_mpirun

PROFILE, _ = load_profile("gb200-nvl72-tray", REPO / "inventories" / "profiles")
UUID = "5f3e0a3c-1b2d-4e5f-8a9b-0c1d2e3f4a5b"

RACKS = {r: [f"{r}-t{t:02d}" for t in range(1, 7)] for r in ("r01", "r02")}
CLIQUE = {"r01": "11", "r02": "12"}


def _jobs():
    profile = apply_overrides(PROFILE, ("diag.nccl_soak_minutes=0",))
    out, i = [], 0
    for trays in RACKS.values():
        for name in trays:
            i += 1
            target = SshTarget(name, f"10.9.0.{10 + i}", key_file="/k", host_key_policy="off")
            out.append(NodeJob(name, profile, target))
    return out


def _fabric(rack: str) -> list[Result]:
    metrics = {"states": {"Completed": 4}, "clique_id": CLIQUE[rack], "cluster_uuid": UUID}
    return [Result("gpu_fabric_state", Verdict.PASS, metrics)]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    script = write_fake_mpirun(tmp_path)
    log = tmp_path / "launches"
    monkeypatch.setenv("FAKE_LOG", str(log))

    def run(slow_rack=(), slow_tray="", both=False, domains=True, mnnvl_busbw=""):
        jobs = _jobs()
        monkeypatch.setenv("FAKE_NAMES", json.dumps({j.target.host: j.name for j in jobs}))
        monkeypatch.setenv("FAKE_SLOW_RACK", json.dumps(list(slow_rack)))
        monkeypatch.setenv("FAKE_SLOW_TRAY", slow_tray)
        monkeypatch.setenv("FAKE_TRAY_BOTH", "1" if both else "")
        monkeypatch.setenv("FAKE_MNNVL_BUSBW", mnnvl_busbw)
        earlier = {n: _fabric(r) for r, trays in RACKS.items() for n in trays} if domains else {}
        ctx = GroupContext(jobs, 7, {"mpirun_path": str(script)}, earlier=earlier)
        results = run_nccl_stage(ctx)
        return {n: rows[0][0] for n, rows in results.items()}

    def launches() -> list[list[str]]:
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    return run, launches


def test_healthy_racks_soak_each_domain_with_mnnvl_on_then_off(fake):
    run, launches = fake
    results = run()
    assert {r.verdict for r in results.values()} == {Verdict.PASS}
    runs = launches()
    assert sorted((r[0], tuple(sorted(r[1:]))) for r in runs) == sorted(
        (mode, tuple(trays)) for mode in ("on", "off") for trays in RACKS.values()
    )
    first = results["r01-t01"]
    assert first.metrics["nvlink_domain"] == rack_label(f"{UUID}/11")
    assert first.metrics["nvlink_reading"] == "fine"


def test_a_bad_switch_tray_fails_its_rack_as_one_statement(fake):
    run, launches = fake
    results = run(slow_rack=RACKS["r02"])
    label = rack_label(f"{UUID}/12")
    for tray in RACKS["r02"]:
        r = results[tray]
        assert r.verdict is Verdict.FAIL
        assert r.reason.startswith(f"the NVLink fabric of rack {label} is slow")
        assert r.metrics["nvlink_reading"] == "nvlink"
        # no tray of the rack is blamed as a bad node
        assert not any("is a bad node" in f.message for f in r.findings)
    assert all(results[t].verdict is Verdict.PASS for t in RACKS["r01"])
    # the rack rule ended r02's localisation after one split: its group, 3 pairs, then the ib pass
    on_runs = [r for r in launches() if r[0] == "on" and set(r[1:]) <= set(RACKS["r02"])]
    assert len(on_runs) == 1 + 3


def test_a_tray_slow_with_mnnvl_only_is_blamed_alone_with_its_pass(fake):
    run, _ = fake
    results = run(slow_tray="r01-t04")
    bad = results["r01-t04"]
    assert bad.verdict is Verdict.FAIL
    assert any(
        f.message == f"tray 4 (r01-t04) of rack {rack_label(f'{UUID}/11')} is slow with multi-node NVLink on "
        "only: its NVLink links"
        for f in bad.findings
    )
    others = [t for trays in RACKS.values() for t in trays if t != "r01-t04"]
    assert all(results[t].verdict is Verdict.PASS for t in others)


def test_a_tray_slow_both_ways_is_the_tray(fake):
    run, _ = fake
    results = run(slow_tray="r02-t02", both=True)
    bad = results["r02-t02"]
    assert bad.verdict is Verdict.FAIL
    assert any("slow with multi-node NVLink on and off" in f.message for f in bad.findings)
    assert results["r02-t01"].metrics["nvlink_reading"] == "network"


def test_a_rack_whose_nvlink_is_slower_than_its_infiniband_warns(fake):
    run, _ = fake
    results = run(mnnvl_busbw="300")  # above the 180 floor, below the 390 over InfiniBand
    for tray in (t for trays in RACKS.values() for t in trays):
        r = results[tray]
        assert r.verdict is Verdict.WARN and r.metrics["nvlink_reading"] == "nvlink"
        assert "slower than InfiniBand on the same trays (median busbw 300 GB/s" in r.findings[-1].message


def test_a_rack_whose_nvlink_is_within_a_soaks_own_wavering_of_its_infiniband_is_fine(fake):
    """Two passes are two measurements: MNNVL a few percent under InfiniBand is no finding, as an
    iteration within the profile's steady fraction of its soak's median is none (0.85 here)."""
    run, _ = fake
    results = run(mnnvl_busbw="380")  # 97% of the 390 over InfiniBand
    for tray in (t for trays in RACKS.values() for t in trays):
        assert results[tray].verdict is Verdict.PASS and results[tray].metrics["nvlink_reading"] == "fine"


def test_without_domains_one_pass_and_says_so(fake):
    run, launches = fake
    results = run(domains=False)
    assert {r.verdict for r in results.values()} == {Verdict.PASS}
    assert all("no NVLink domain known" in results[n].findings[-1].message for n in results)
    assert {r[0] for r in launches()} == {"off"}  # NCCL's default: no NCCL_MNNVL_ENABLE given


def _passed(check="nccl_soak"):
    return [(Result(check, Verdict.PASS, {"busbw_gbps": 390}), "runs\n@@burnin-nccl-record v1\n{}")]


def test_merge_labels_each_pass_and_drops_the_replay_records():
    failed = Result.judged("nccl_soak", [critical("busbw 40 < 180", Action.RMA)])
    result, evidence = merge([(failed, "on runs")], _passed(), [])
    assert result.verdict is Verdict.FAIL
    assert result.findings[0].message == "multi-node NVLink on: busbw 40 < 180"
    assert result.metrics["mnnvl"]["verdict"] == "FAIL" and result.metrics["ib"]["verdict"] == "PASS"
    assert "@@burnin-nccl-record" not in evidence and "##### multi-node NVLink off" in evidence


def test_merge_a_rack_statement_fails_a_tray_the_localiser_left_unknown_without_an_action_on_it():
    unknown = Result.unknown("nccl_soak", "localisation could not judge r01-t01")
    blame = RackBlame("nvlink_fabric", "r01", ("r01-t01", "r01-t02"), "the NVLink fabric of rack r01 is slow")
    result, _ = merge([(unknown, "")], _passed(), [blame])
    assert result.verdict is Verdict.FAIL and result.reason == blame.message
    top = result.findings[0]
    assert top.severity is Severity.CRITICAL and top.action is Action.MONITOR and top.subject == "r01"


def test_merge_of_nothing_is_unknown():
    result, _ = merge(None, None, [])
    assert result.verdict is Verdict.UNKNOWN

"""`burnin rejudge`: a saved run's results judged again from their stored evidence, with the
node's profile and --set items; new results in a new 'rejudge' run, the originals untouched;
a result without evidence says it cannot be re-judged, never a pass."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner
from sqlalchemy import select, update

from bringup.core.errors import BadInput
from bringup.fleet.lifecycle import State
from bringup.fleet.models import CheckResult, Run
from bringup.fleet.store import FleetStore
from burnin.checks.base import CommandOutput
from burnin.checks.copy_bandwidth import CopyBandwidthCheck
from burnin.cli import main
from burnin.result import Verdict
from burnin.run.rejudge import NotRejudgeable, output_of, rejudge_run
from burnin.stages.runner import judge_stage
from tests.paths import REPO
from tests.unit.burnin.golden.test_rules import FleetRack
from tests.unit.burnin.stages.test_nccl import _jobs, _profile, fake  # noqa: F401 - the fixture

LAB = REPO / "bringup" / "lab" / "standins" / "samples"
HEALTHY = (LAB / "nvbandwidth_h2d_d2h_ce_8xh100_DERIVED.txt").read_text().split("\n", 1)[1]
SLOW = (LAB / "nvbandwidth_h2d_d2h_ce_8xh100_gpu5_h2d_slow_DERIVED.txt").read_text().split("\n", 1)[1]
RAISE = "floors.h2d_gbps=53"  # every GPU of HEALTHY moves 52.7x GB/s: all under it
LOWER = ["floors.h2d_gbps=20", "floors.copy_fraction_of_best=0.4"]  # SLOW's GPU 5 (26.39) passes


def saved_run(fleet: FleetRack, rows: dict[str, list[dict]], params: dict | None = None) -> int:
    """A finished burn-in run with these results (node -> rows), as burnin run saves them."""
    run = fleet.store.start_run("burnin", "r09", params=params or {})
    for node, node_rows in rows.items():
        fleet.store.add_results(node, node_rows, run_id=run.id)
    fleet.store.finish_run(run.id, "done")
    return run.id


def copy_row(evidence: str | None, verdict: str = "PASS", **kw) -> dict:
    return {"stage": "gpu", "check": "copy_bandwidth", "verdict": verdict, "evidence": evidence, **kw}


def originals(fleet: FleetRack, run_id: int) -> list[tuple]:
    with fleet.store.reading() as s:
        rows = s.execute(select(CheckResult).where(CheckResult.run_id == run_id).order_by(CheckResult.id))
        return [(r.id, r.verdict, r.findings, r.metrics, r.evidence_id, r.time) for r in rows.scalars()]


def test_a_raised_floor_fails_what_passed_and_the_original_stays(tmp_path):
    fleet = FleetRack(tmp_path)
    run_id = saved_run(fleet, {"gpu001": [copy_row(HEALTHY)], "gpu002": [copy_row(HEALTHY)]})
    before = originals(fleet, run_id)
    done = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, [RAISE])
    assert [(i.node, i.old, i.new.verdict) for i in done.items] == [
        ("gpu001", Verdict.PASS, Verdict.FAIL),
        ("gpu002", Verdict.PASS, Verdict.FAIL),
    ]
    added, gone = done.items[0].changed_findings()
    assert len(added) == 16 and not gone and "floor of 53 GB/s" in added[0]
    assert done.summary() == {
        "results": 2, "rejudged": 2, "changed": 2, "worse": 2, "better": 0, "cannot_rejudge": 0,
        "superseded": 0,
    }  # fmt: skip
    assert originals(fleet, run_id) == before  # untouched
    new = fleet.store.get_run(done.run_id)
    assert new.kind == "rejudge" and new.status == "failed" and new.rack == "r09"
    assert new.params["of_run"] == run_id and new.params["set"] == [RAISE]
    (latest,) = [r for r in fleet.store.latest_results("gpu001") if r.check == "copy_bandwidth"]
    assert latest.run_id == done.run_id and latest.verdict == "FAIL"
    assert latest.metrics["rejudged_from"] == before[0][0]
    assert latest.evidence_id == before[0][4]  # the same evidence, stored once
    assert latest.time == before[0][5]  # measured then: golden's --max-age counts from then


def test_without_set_items_nothing_changes_and_a_lower_floor_passes_a_failure(tmp_path):
    fleet = FleetRack(tmp_path)
    slow = CopyBandwidthCheck()
    from burnin.checks.base import judge
    from tests.profiles import shipped

    failed = judge(slow, CommandOutput(SLOW), shipped())
    assert failed.verdict is Verdict.FAIL
    findings = [f.to_dict() for f in failed.findings]
    run_id = saved_run(fleet, {"gpu001": [copy_row(SLOW, "FAIL", findings=findings)]})
    same = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, record=False)
    (item,) = same.items
    assert item.new.verdict is Verdict.FAIL and not item.changed and same.run_id is None
    lower = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, LOWER, record=False)
    assert lower.items[0].better and lower.items[0].new.verdict is Verdict.PASS
    assert lower.items[0].changed_findings()[1]  # the finding that is gone
    assert [r.kind for r in _runs(fleet)] == ["burnin"]  # --dry-run records nothing


def _runs(fleet: FleetRack) -> list[Run]:
    with fleet.store.reading() as s:
        return list(s.execute(select(Run).order_by(Run.id)).scalars())


def test_the_runs_own_set_items_apply_first(tmp_path):
    fleet = FleetRack(tmp_path)
    # The run was judged with lower floors (SLOW passed); judged again, they stay.
    run_id = saved_run(fleet, {"gpu001": [copy_row(SLOW)]}, params={"set": LOWER})
    done = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, record=False)
    assert done.items[0].new.verdict is Verdict.PASS and done.run_set == tuple(LOWER)
    done = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, ["floors.h2d_gbps=48"], record=False)
    assert done.items[0].new.verdict is Verdict.FAIL


def test_results_without_evidence_cannot_be_rejudged_and_are_not_recorded(tmp_path):
    fleet = FleetRack(tmp_path)
    rows = [
        copy_row(None),
        {"stage": "preflight", "check": "gpu_inventory", "verdict": "UNKNOWN", "evidence": "x\n",
         "metrics": {"reason": "could not run: SSH timed out"}},
        {"stage": "nccl", "check": "nccl_soak", "verdict": "PASS", "evidence": "# nccl-tests...\n"},
        {"stage": "ib", "check": "ib_bandwidth", "verdict": "PASS", "evidence": "== ibstat ==\n"},
    ]  # fmt: skip
    run_id = saved_run(fleet, {"gpu001": rows, "gpu002": [copy_row(HEALTHY)]})
    with fleet.store.session() as s:  # `bringup store prune` dropped gpu002's evidence
        s.execute(
            update(CheckResult)
            .where(CheckResult.run_id == run_id, CheckResult.node_id != None)  # noqa: E711
            .where(CheckResult.check == "copy_bandwidth", CheckResult.evidence_id != None)  # noqa: E711
            .values(evidence_id=None, evidence_pruned_at=datetime(2026, 11, 1, tzinfo=timezone.utc))
        )
    done = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, [RAISE])
    why = {(i.node, i.check): i.cannot for i in done.items}
    assert all(why.values()) and all(i.new is None for i in done.items)
    assert why[("gpu001", "copy_bandwidth")] == "no evidence was kept with this result"
    assert why[("gpu002", "copy_bandwidth")].startswith("evidence pruned 2026-11-01")
    assert "could not judge it either (could not run: SSH timed out)" in why[("gpu001", "gpu_inventory")]
    assert "no nccl record" in why[("gpu001", "nccl_soak")]
    assert "no ib record" in why[("gpu001", "ib_bandwidth")]
    assert done.run_id is None and [r.kind for r in _runs(fleet)] == ["burnin"]  # nothing to record


def test_the_exit_status_is_kept_with_the_evidence_and_read_back():
    check = CopyBandwidthCheck()  # judges any exit status: nvbandwidth exits 1 after a CUDA error
    out = CommandOutput(stdout=HEALTHY, stderr="cuda error\n", rc=1)
    ((_, evidence),) = judge_stage([check], _shipped(), {"k": out}, {check.name: "k"}, {})
    back, cut = output_of(evidence)
    assert (back.stdout, back.stderr, back.rc, cut) == (HEALTHY, "cuda error\n", 1, "")
    ((_, clean),) = judge_stage([check], _shipped(), {"k": CommandOutput(HEALTHY)}, {check.name: "k"}, {})
    assert clean == HEALTHY and output_of(clean)[0].rc == 0


def _shipped():
    from tests.profiles import shipped

    return shipped()


def test_a_bad_set_item_or_a_running_run_records_nothing(tmp_path):
    fleet = FleetRack(tmp_path)
    run_id = saved_run(fleet, {"gpu001": [copy_row(HEALTHY)]})
    with pytest.raises(BadInput, match="floors.h2d_gbps"):
        rejudge_run(fleet.store, fleet.dir / "profiles", run_id, ["floors.h2d_gbps=fast"])
    running = fleet.store.start_run("burnin", "r09")
    with pytest.raises(NotRejudgeable, match="still running"):
        rejudge_run(fleet.store, fleet.dir / "profiles", running.id)
    fleet.store.finish_run(running.id, "done")
    with pytest.raises(NotRejudgeable, match="no check results"):
        rejudge_run(fleet.store, fleet.dir / "profiles", running.id)
    assert [r.kind for r in _runs(fleet)] == ["burnin", "burnin"]


def test_a_golden_node_failed_by_a_rejudge_leaves_golden(tmp_path):
    fleet = FleetRack(tmp_path)
    run_id = saved_run(fleet, {"gpu001": [copy_row(HEALTHY)]})
    fleet.store.transition("gpu001", State.GOLDEN, "test setup")
    rejudge_run(fleet.store, fleet.dir / "profiles", run_id, [RAISE])
    assert fleet.store.get_node("gpu001").state == State.FAILED.value


# ---- the command ---------------------------------------------------------------------------------


def test_cli_prints_what_changed_and_exits_1_when_a_verdict_got_worse(tmp_path):
    fleet = FleetRack(tmp_path)
    run_id = saved_run(fleet, {"gpu001": [copy_row(HEALTHY)], "gpu002": [copy_row(None)]})
    res = fleet.run("rejudge", "--run", str(run_id), "--set", RAISE)
    assert res.exit_code == 1, res.output
    assert "gpu001" in res.output and "gpu/copy_bandwidth" in res.output and "FAIL" in res.output
    assert "no evidence was kept" in res.output
    assert f"run {run_id} with --set {RAISE}: 1 of 2 result(s) judged again, 1 changed (1 worse" in res.output
    assert "1 cannot be re-judged; recorded as run" in res.output


def test_cli_json_and_dry_run(tmp_path):
    fleet = FleetRack(tmp_path)
    run_id = saved_run(fleet, {"gpu001": [copy_row(HEALTHY)]})
    res = fleet.run("rejudge", "--run", str(run_id), "--dry-run", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["of_run"] == run_id and doc["run"] is None and doc["summary"]["changed"] == 0
    (row,) = doc["results"]
    assert (row["node"], row["check"], row["old"], row["new"], row["changed"]) == (
        "gpu001", "copy_bandwidth", "PASS", "PASS", False
    )  # fmt: skip


def test_cli_usage_errors(tmp_path):
    fleet = FleetRack(tmp_path)
    assert fleet.run("rejudge").exit_code == 2  # --run is required
    res = fleet.run("rejudge", "--run", "999")
    assert res.exit_code != 0 and "no run 999" in res.output and "Traceback" not in res.output
    run_id = saved_run(fleet, {"gpu001": [copy_row(HEALTHY)]})
    res = fleet.run("rejudge", "--run", str(run_id), "--set", "nonsense")
    assert res.exit_code != 0 and "KEY=VALUE" in res.output and "Traceback" not in res.output


def test_help_lists_the_command():
    res = CliRunner().invoke(main, ["--help"])
    assert "rejudge" in res.output


def test_an_nccl_soak_is_judged_again_per_group(tmp_path, fake):  # noqa: F811
    run, launches, _ = fake
    results = run(_jobs(4, _profile()))  # node01..node04 soak together and pass at 390 GB/s
    fleet = FleetRack(tmp_path)
    nodes = ["gpu001", "gpu002", "gpu003", "gpu004"]
    rows = {
        node: [{"stage": "nccl", "check": "nccl_soak", "verdict": "PASS", "evidence": judged[0][1]}]
        for node, judged in zip(nodes, results.values(), strict=True)
    }
    run_id = saved_run(fleet, rows)
    launched = len(launches())
    done = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, ["floors.nccl_busbw_multi_node_gbps=400"])
    assert {(i.node, i.old, i.new.verdict) for i in done.items} == {
        (n, Verdict.PASS, Verdict.FAIL) for n in nodes
    }
    assert len(launches()) == launched  # nothing ran
    same = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, record=False)
    assert not any(i.changed for i in same.items)


def test_a_newer_measurement_is_not_overridden_and_a_golden_node_stays(tmp_path):
    fleet = FleetRack(tmp_path)
    old = saved_run(fleet, {"gpu001": [copy_row(HEALTHY, time=datetime(2026, 11, 1, tzinfo=timezone.utc))]})
    saved_run(fleet, {"gpu001": [copy_row(HEALTHY)]})  # measured again since
    fleet.store.transition("gpu001", State.GOLDEN, "test setup")
    done = rejudge_run(fleet.store, fleet.dir / "profiles", old, [RAISE])
    (item,) = done.items
    assert item.superseded and item.new.verdict is Verdict.FAIL and done.summary()["superseded"] == 1
    assert done.run_id is None  # nothing to record: the newer result stands
    assert fleet.store.get_node("gpu001").state == State.GOLDEN.value


def test_what_cannot_be_rejudged_is_carried_and_a_rejudge_run_can_be_rejudged(tmp_path):
    fleet = FleetRack(tmp_path)
    inventory = {"stage": "preflight", "check": "gpu_inventory", "verdict": "PASS", "evidence": None}
    run_id = saved_run(fleet, {"gpu001": [copy_row(SLOW), inventory]}, params={"set": LOWER[:1]})
    first = rejudge_run(fleet.store, fleet.dir / "profiles", run_id, LOWER[1:])
    assert [i.new.verdict if i.new else i.cannot for i in first.items] == [
        Verdict.PASS, "no evidence was kept with this result"
    ]  # fmt: skip
    carried = [r for r in fleet.store.latest_results("gpu001") if r.check == "gpu_inventory"]
    assert carried[0].run_id == first.run_id and carried[0].verdict == "PASS"
    assert carried[0].metrics["not_rejudged"] == "no evidence was kept with this result"
    again = rejudge_run(fleet.store, fleet.dir / "profiles", first.run_id, record=False)
    assert again.run_set == tuple(LOWER)  # the first run's items, then the first rejudge's
    assert again.items[0].new.verdict is Verdict.PASS and not again.items[0].changed


def test_rejudge_on_each_store_engine(store_url):
    store = FleetStore(store_url)
    store.enroll("gpu001", "r09", "h100-sxm-8x400g")
    run = store.start_run("burnin", "r09")
    store.add_results("gpu001", [copy_row(HEALTHY)], run_id=run.id)
    store.finish_run(run.id, "done")
    done = rejudge_run(store, REPO / "inventories" / "profiles", run.id, [RAISE])
    assert done.items[0].new.verdict is Verdict.FAIL and store.get_run(done.run_id).kind == "rejudge"
    (latest,) = store.latest_results("gpu001")
    assert latest.run_id == done.run_id and latest.metrics["rejudged_from"] == done.items[0].result_id

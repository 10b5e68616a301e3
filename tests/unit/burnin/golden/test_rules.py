"""Golden selection: the pure rules, the lifecycle moves, and `burnin golden` over a real store."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bringup.fleet.lifecycle import State
from bringup.fleet.models import CheckResult, utcnow
from bringup.fleet.runs import run_ledger
from bringup.fleet.store import FleetStore
from burnin.cli import main
from burnin.golden import rules as golden
from burnin.golden.rules import GoldenRules, judge, parse_age, plan_move
from burnin.stages import STAGE_ORDER
from tests.fleet import walk_to
from tests.inventories import write_rack
from tests.profiles import minimal

REPO = Path(__file__).resolve().parents[4]
SAMPLES = REPO / "tests" / "fixtures" / "samples"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
CRIT = {"message": "GPU 3 in HW slowdown under load", "severity": "critical", "action": "RESEAT"}


def row(stage, check, verdict="PASS", *, at=NOW - timedelta(hours=1), run=1, findings=(), **metrics):
    return CheckResult(
        stage=stage,
        check=check,
        verdict=verdict,
        time=at,
        run_id=run,
        metrics=metrics,
        findings=list(findings),
    )


def all_pass(at=NOW - timedelta(hours=1), run=1, stages=STAGE_ORDER):
    return [row(s, f"{s}_check", at=at, run=run) for s in stages]


# ---- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("7d", 7 * 86400),
        ("36h", 36 * 3600),
        ("90m", 5400),
        ("1w", 7 * 86400),
        ("3600s", 3600),
        ("2", 2 * 86400),
    ],
)
def test_parse_age(text, seconds):
    assert parse_age(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "7 days", "-1d", "0d", "d7", "7y"])
def test_parse_age_rejects(text):
    with pytest.raises(ValueError):
        parse_age(text)


def test_format_age():
    assert golden.format_age(timedelta(days=7)) == "7 d"
    assert golden.format_age(timedelta(hours=36)) == "36 h"
    assert golden.format_age(timedelta(minutes=90)) == "90 min"


def test_required_stages_default_no_ib_profile_and_override():
    ib = minimal({"ib": {"hca_count": 8}}, name="p")
    no_ib = minimal({"ib": {"hca_count": 0}}, name="q")
    assert golden.required_stages(ib) == STAGE_ORDER
    assert "ib" not in golden.required_stages(no_ib) and "nccl" in golden.required_stages(no_ib)
    assert golden.required_stages(ib, ["pcie", "preflight"]) == ("preflight", "pcie")


def test_rules_from_inventory_vars_and_command_line_wins():
    hv = {"golden_max_age_days": 3, "golden_stages": "preflight,gpu"}
    rules = golden.rules_from_vars(hv, None)
    assert rules.max_age == timedelta(days=3) and rules.stages == ("preflight", "gpu")
    rules = golden.rules_from_vars(hv, None, timedelta(hours=5), ["pcie"])
    assert rules.max_age == timedelta(hours=5) and rules.stages == ("pcie",)
    assert golden.rules_from_vars({}, None) == GoldenRules()
    assert golden.rules_from_vars({"golden_stages": ["gpu", "preflight"]}, None).stages == (
        "preflight",
        "gpu",
    )
    for bad in ({"golden_stages": "preflite"}, {"golden_max_age_days": "soon"}):
        with pytest.raises(ValueError, match="inventory variable"):
            golden.rules_from_vars(bad, None)


# ---- the rules ------------------------------------------------------------------------------------


def test_every_stage_passed_is_golden_and_warn_counts_as_pass():
    rows = all_pass()
    rows[1] = row("gpu", "gpu_check", "WARN")
    d = judge("n1", "burnin", rows, GoldenRules(), NOW)
    assert d.golden and d.reasons == () and d.run_id == 1


def test_a_stage_that_never_ran_is_not_golden():
    d = judge("n1", "burnin", all_pass(stages=("preflight", "gpu", "pcie")), GoldenRules(), NOW)
    assert not d.golden
    assert d.reasons == ("stage ib never ran", "stage nccl never ran")
    # ... unless the rack's rules do not require them
    d = judge(
        "n1",
        "burnin",
        all_pass(stages=("preflight", "gpu", "pcie")),
        GoldenRules(("preflight", "gpu", "pcie")),
        NOW,
    )
    assert d.golden


def test_unknown_is_never_golden():
    rows = all_pass() + [row("ib", "ib_bandwidth", "UNKNOWN", reason="ib_write_bw timed out")]
    d = judge("n1", "burnin", rows, GoldenRules(), NOW)
    assert not d.golden and not d.failed
    assert d.reasons == ("stage ib UNKNOWN (run 1): ib_bandwidth: ib_write_bw timed out",)


def test_a_failure_names_the_check_finding_and_action():
    rows = all_pass() + [row("gpu", "gpu_stress", "FAIL", findings=[CRIT])]
    d = judge("n1", "burnin", rows, GoldenRules(), NOW)
    assert d.failed and not d.golden
    assert d.reasons == ("stage gpu FAIL (run 1): gpu_stress: GPU 3 in HW slowdown under load -> RESEAT",)


def test_the_newest_run_of_a_stage_decides():
    old_fail = row("gpu", "gpu_stress", "FAIL", at=NOW - timedelta(days=2), run=1, findings=[CRIT])
    new_pass = [row(s, f"{s}_check", at=NOW - timedelta(hours=1), run=2) for s in STAGE_ORDER]
    assert judge("n1", "burnin", [old_fail, *new_pass], GoldenRules(), NOW).golden
    old_pass = all_pass(at=NOW - timedelta(days=2), run=1)
    new_fail = row("gpu", "gpu_stress", "FAIL", at=NOW - timedelta(hours=1), run=2, findings=[CRIT])
    d = judge("n1", "burnin", [*old_pass, new_fail], GoldenRules(), NOW)
    assert not d.golden and d.failed and d.stages["gpu"].run_id == 2


def test_results_past_the_maximum_age():
    rows = all_pass(at=NOW - timedelta(days=2), run=4)
    rows[2] = row("pcie", "pcie_check", at=datetime(2026, 11, 10, 8, tzinfo=timezone.utc), run=3)
    d = judge("n1", "golden", rows, GoldenRules(), NOW)
    assert not d.golden and d.aged_out and not d.failed
    assert d.reasons == ("results older than 7 d (latest pcie result 2026-11-10)",)
    assert judge("n1", "golden", rows, GoldenRules(max_age=timedelta(days=14)), NOW).golden


def test_state_rules():
    rows = all_pass()
    assert judge("n1", "retired", rows, GoldenRules(), NOW).reasons == ("retired",)
    d = judge("n1", "failed", rows, GoldenRules(), NOW, state_reason="burn-in stage gpu failed: x")
    assert d.reasons == ("state failed (burn-in stage gpu failed: x)",)
    busy = "burnin run 9 (controller h1 pid 42, started 3 min ago)"
    d = judge("n1", "burnin", rows, GoldenRules(), NOW, in_run=busy)
    assert not d.golden and d.reasons == (f"in burn-in now: {busy}",)
    assert judge("n1", "golden", rows, GoldenRules(), NOW, in_run=busy).golden  # only burnin waits


def test_moves():
    rules = GoldenRules()
    m = plan_move(judge("n1", "burnin", all_pass(run=7), rules, NOW), rules)
    assert m.target is State.GOLDEN and m.run_id == 7 and m.details["run_id"] == 7
    assert m.reason.startswith("passed stages preflight,gpu,pcie,ib,nccl (run 7); oldest result ")
    assert plan_move(judge("n1", "golden", all_pass(), rules, NOW), rules) is None
    failing = [*all_pass(run=7), row("gpu", "gpu_stress", "FAIL", run=8, findings=[CRIT])]
    m = plan_move(judge("n1", "golden", failing, rules, NOW), rules)
    assert m.target is State.FAILED and m.run_id == 8 and m.reason.startswith("left golden: stage gpu FAIL")
    aged = all_pass(at=NOW - timedelta(days=8))
    m = plan_move(judge("n1", "golden", aged, rules, NOW), rules)
    assert m.target is State.CONFIGURED and "results older than 7 d" in m.reason and m.details["aged_out"]
    assert plan_move(judge("n1", "failed", all_pass(), rules, NOW), rules) is None
    assert plan_move(judge("n1", "burnin", aged, rules, NOW), rules) is None  # stays burnin


# ---- a real store, inventory and the CLI ------------------------------------------------------------

RACK = "r09"
NODES = ("gpu001", "gpu002", "gpu003", "gpu004")


class FleetRack:
    """An inventory of four nodes and a fleet store in tmp_path; helpers that save burn-in results."""

    def __init__(self, tmp_path: Path, rack_vars: dict | None = None):
        hosts = {
            n: {"bmc_address": f"10.9.1.{i}", "rack_unit": i, "ansible_host": f"10.9.0.{i}"}
            for i, n in enumerate(NODES, start=1)
        }
        self.dir = write_rack(
            tmp_path / "inventories",
            RACK,
            hosts,
            password="secret",
            password_file="bmc.pass",
            bmc_vendor="generic",
            **(rack_vars or {}),
        )
        self.db = tmp_path / "fleet.db"
        self.store = FleetStore(f"sqlite:///{self.db}")
        for i, name in enumerate(NODES, start=1):
            self.store.enroll(name, RACK, "h100-sxm-8x400g", rack_unit=i)
            walk_to(self.store, name, State.BURNIN)
        self.store.update_node(
            "gpu001",
            serial="SN-001",
            hardware={"bmc": {"firmware_version": "7.10.30.00"}, "system": {"bios_version": "2.3.5"}},
        )

    def results(
        self, node: str, stages=STAGE_ORDER, at: datetime | None = None, fail: str | None = None
    ) -> int:
        """One finished burn-in run over ``stages``: everything passes except stage ``fail``."""
        run = self.store.start_run("burnin", RACK)
        at = at or utcnow()
        ibstat = (SAMPLES / "ibstat_h100_ethernet_ports_disabled.txt").read_text()
        per_stage = {
            "preflight": [
                ("gpu_inventory", {"gpus": 8, "uuids": [f"GPU-{node}-{i}" for i in range(8)]}, ""),
                ("gpu_versions", {"driver": "535.183.01", "cuda": "12.2", "vbios": ["96.00.89.00.01"]}, ""),
                ("ib_ports", {"ports": 8, "active": 8, "firmware": ["28.39.1002"]}, ibstat),
            ],
            "gpu": [("gpu_stress", {"tflops_min": 760.0}, "")],
            "pcie": [("pcie_links", {"load_readings": 3}, "")],
            "ib": [
                (
                    "ib_bandwidth",
                    {f"mlx5_{p}": {"gbps": 392.0 - p, "partner": f"other/mlx5_{p}"} for p in range(2)},
                    "",
                )
            ],
            "nccl": [
                (
                    "nccl_soak",
                    {
                        "iterations": [
                            {
                                "index": i,
                                "busbw_gbps": 370.0 + i,
                                "wrong": 0,
                                "seconds": 30.0,
                                "verdict": "PASS",
                            }
                            if fail != "nccl" or i != 2
                            else {
                                "index": i,
                                "busbw_gbps": 121.5,
                                "wrong": 3,
                                "seconds": 31.0,
                                "verdict": "FAIL",
                            }
                            for i in range(4)
                        ]
                    },
                    "",
                )
            ],
        }
        for stage in stages:
            rows = []
            for check, metrics, evidence in per_stage[stage]:
                verdict, findings = ("FAIL", [CRIT]) if stage == fail else ("PASS", [])
                rows.append(
                    {
                        "stage": stage,
                        "check": check,
                        "verdict": verdict,
                        "metrics": metrics,
                        "findings": findings,
                        "evidence": evidence or f"{check} output",
                        "time": at,
                    }
                )
            self.store.add_results(node, rows, run_id=run.id)
        self.store.finish_run(run.id, "done")
        return run.id

    def run(self, *args: str):
        return CliRunner().invoke(main, ["--db", str(self.db), "--inventory-dir", str(self.dir), *args])


@pytest.fixture
def fleet(tmp_path) -> FleetRack:
    return FleetRack(tmp_path)


def test_golden_cli_moves_qualifying_nodes_and_prints_only_the_export(fleet):
    run1 = fleet.results("gpu001")
    fleet.results("gpu002", stages=("preflight", "gpu", "pcie"))  # no ib, nccl
    fleet.results("gpu003", fail="gpu")
    res = fleet.run("golden", "--rack", RACK)
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stdout.splitlines() if not line.startswith("#")]
    assert lines == ["10.9.0.1 slots=8"]  # ansible_host (no IP in the store yet), one slot per GPU
    assert "from store sqlite:///" in res.stdout and "golden 1 of 4" in res.stdout
    assert "gpu001 -> golden" in res.stderr and "excluded gpu002 (burnin): stage ib never ran" in res.stderr
    node = fleet.store.get_node("gpu001")
    assert node.state == "golden"
    event = fleet.store.history("gpu001")[-1]
    assert event.to_state == "golden" and event.run_id == run1 and event.details["run_id"] == run1
    assert fleet.store.get_node("gpu002").state == "burnin"
    # gpu003: a failed stage while in burnin is the runner's move, not golden's
    assert fleet.store.get_node("gpu003").state == "burnin"
    # idempotent: a second run moves nothing and exports the same node
    before = len(fleet.store.history("gpu001"))
    res = fleet.run("golden", "--rack", RACK)
    assert res.exit_code == 0 and "gpu001 -> golden" not in res.stderr
    assert len(fleet.store.history("gpu001")) == before
    assert [x for x in res.stdout.splitlines() if not x.startswith("#")] == ["10.9.0.1 slots=8"]


def test_stages_override_for_a_rack_without_ib(fleet):
    fleet.results("gpu002", stages=("preflight", "gpu", "pcie"))
    res = fleet.run("golden", "--rack", RACK, "--stages", "preflight,gpu,pcie", "--format", "slurm")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-1] == "gpu002"
    assert fleet.store.get_node("gpu002").state == "golden"


def test_dry_run_records_nothing(fleet):
    fleet.results("gpu001")
    res = fleet.run("golden", "--rack", RACK, "--dry-run", "--format", "json")
    assert res.exit_code == 0, res.output
    assert "would move gpu001 -> golden" in res.stderr
    assert fleet.store.get_node("gpu001").state == "burnin"
    doc = json.loads(res.stdout)
    assert [n["name"] for n in doc["nodes"]] == ["gpu001"] and doc["nodes"][0]["golden"]["since"] is None


def test_a_golden_node_past_the_maximum_age_leaves_golden(fleet):
    """The issue's max-age rule: the next `burnin golden` moves it out, and the event says why."""
    fleet.results("gpu001", at=utcnow() - timedelta(days=6))
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    assert fleet.store.get_node("gpu001").state == "golden"
    # two days later (simulated with a shorter maximum age: the results are now 6 days old)
    res = fleet.run("golden", "--rack", RACK, "--max-age", "5d", "--format", "json")
    assert res.exit_code == 0, res.output
    assert fleet.store.get_node("gpu001").state == "configured"
    doc = json.loads(res.stdout)
    assert doc["nodes"] == [] and doc["excluded"][0]["state"] == "configured"  # the state after the move
    assert "gpu001 -> configured: left golden: results older than 5 d" in res.stderr
    event = fleet.store.history("gpu001")[-1]
    assert event.from_state == "golden" and event.to_state == "configured"
    day = (utcnow() - timedelta(days=6)).date().isoformat()
    assert event.reason == f"left golden: results older than 5 d (latest preflight result {day})"
    assert event.details["aged_out"] is True


def test_max_age_from_the_inventory(tmp_path):
    fleet = FleetRack(tmp_path, {"golden_max_age_days": 2})
    fleet.results("gpu001", at=utcnow() - timedelta(days=3))
    res = fleet.run("golden", "--rack", RACK, "--format", "csv", "--excluded")
    assert res.exit_code == 0, res.output
    assert "results older than 2 d" in res.stdout and fleet.store.get_node("gpu001").state == "burnin"


def test_a_later_failure_moves_a_golden_node_to_failed_at_once(fleet):
    """The failing result itself moves it (the store, in the result's transaction): no golden
    run in between, so no export lists it after its failure."""
    fleet.results("gpu001")
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    run2 = fleet.results("gpu001", stages=("gpu",), fail="gpu")  # e.g. a result saved by another tool
    event = fleet.store.history("gpu001")[-1]
    assert (event.from_state, event.to_state, event.run_id) == ("golden", "failed", run2)
    assert event.reason == f"left golden: gpu gpu_stress FAIL: {CRIT['message']} -> RESEAT"
    res = fleet.run("golden", "--rack", RACK)
    assert res.exit_code == 0, res.output
    assert "gpu001" not in res.stdout and "excluded gpu001 (failed)" in res.stderr


def test_a_running_burnin_is_not_golden_yet(fleet):
    """A live run holding the node (this test's process) keeps it out; once it ended it does not."""
    fleet.results("gpu001")
    fleet.store.transition("gpu001", State.GOLDEN, "test")
    with run_ledger(fleet.store, "burnin", RACK, nodes=["gpu001"]) as run:
        fleet.store.transition("gpu001", State.BURNIN, "re-test", run_id=run.id)
        res = fleet.run("golden", "--rack", RACK, "--excluded")
        assert f"in burn-in now: burnin run {run.id} (controller " in res.stdout
        assert fleet.store.get_node("gpu001").state == "burnin"
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    assert fleet.store.get_node("gpu001").state == "golden"


def test_errors_are_one_line(fleet):
    res = fleet.run("golden", "--rack", RACK, "--max-age", "soon")
    assert res.exit_code == 2 and "--max-age" in res.output
    res = fleet.run("golden", "--rack", RACK, "--stages", "gpu,warp")
    assert res.exit_code == 2 and "warp" in res.output
    res = fleet.run("golden", "--rack", "nope")
    assert res.exit_code == 1 and "no such inventory" in res.output  # a rack to fix (README, "Exit codes")


def test_nodes_outside_the_store_or_the_inventory_are_excluded(fleet, tmp_path):
    fleet.store.enroll("stray01", RACK, "h100-sxm-8x400g")
    doc = yaml.safe_load((fleet.dir / f"{RACK}.yml").read_text())
    doc["all"]["children"][RACK]["hosts"]["gpu005"] = {"bmc_address": "10.9.1.5", "rack_unit": 5}
    (fleet.dir / f"{RACK}.yml").write_text(yaml.safe_dump(doc))
    res = fleet.run("golden", "--rack", RACK, "--excluded")
    assert res.exit_code == 0, res.output
    assert "gpu005\tnot enrolled\tnot enrolled in the fleet store" in res.stdout
    assert f"stray01\tenrolled\tnot in the inventory of rack {RACK}" in res.stdout


def test_results_that_grow_old_in_the_store_age_out_under_the_default(fleet):
    """The same with the default 7 days: the saved results are moved back in time, as 8 days
    of waiting would leave them."""
    from sqlalchemy import update

    fleet.results("gpu001")
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    assert fleet.store.get_node("gpu001").state == "golden"
    eight_days_ago = utcnow() - timedelta(days=8)
    with fleet.store.session() as s:
        s.execute(update(CheckResult).values(time=eight_days_ago))
    res = fleet.run("golden", "--rack", RACK)
    assert res.exit_code == 0, res.output
    event = fleet.store.history("gpu001")[-1]
    assert (event.from_state, event.to_state) == ("golden", "configured")
    assert "results older than 7 d" in event.reason and eight_days_ago.date().isoformat() in event.reason


def test_a_bad_inventory_rule_is_a_one_line_error(tmp_path):
    fleet = FleetRack(tmp_path, {"golden_stages": "preflight,warp"})
    res = fleet.run("golden", "--rack", RACK)
    assert res.exit_code == 1 and "golden_stages" in res.stderr and "warp" in res.stderr
    assert "Traceback" not in res.output


# ---- the scheduler's view: nodes Slurm will not run ----------------------------------------------

SINFO_VIEW = (
    "gpu001|drained|root(0)|2026-11-28T10:00:00|DIMM reseat pending\n"
    "gpu002|idle|Unknown|Unknown|none\n"
    "gpu003|down*|slurm(64030)|2026-11-28T09:00:00|Not responding\n"
    "gpu004|mixed|Unknown|Unknown|none\n"
)


def test_nodes_slurm_will_not_run_are_named_with_why():
    from burnin.parsers.slurm import parse_sinfo_nodes

    view = parse_sinfo_nodes(
        SINFO_VIEW
        + "gpu005|draining|alice(1001)|2026-11-28T11:00:00|bringup: gpu_ecc: GPU 2 uncorrected\n"
        + "gpu006|idle*|Unknown|Unknown|none\n"
        + "gpu007|allocated|Unknown|Unknown|none\n"
        + "gpu008|fail|root(0)|2026-11-28T08:00:00|PSU swap\n"
    )
    assert golden.not_run_by_scheduler(view) == {
        "gpu001": "drained in Slurm by root: DIMM reseat pending",
        "gpu003": "down* in Slurm: Not responding",
        "gpu005": "draining in Slurm by alice: bringup: gpu_ecc: GPU 2 uncorrected",
        "gpu006": "idle* in Slurm: not responding",
        "gpu008": "fail in Slurm: PSU swap",
    }


def test_a_golden_node_the_scheduler_will_not_run_is_excluded_and_stays_golden():
    decision = judge("gpu001", "golden", all_pass(), GoldenRules(), NOW)
    held = golden.held_by_scheduler(decision, "drained in Slurm by root: DIMM reseat pending")
    assert not held.golden
    assert held.reasons == ("not run by the scheduler: drained in Slurm by root: DIMM reseat pending",)
    assert plan_move(decision, GoldenRules()) is None  # the move is planned from the judgement itself
    assert golden.held_by_scheduler(decision, None) is decision


def _fake_sinfo(tmp_path: Path, text: str, monkeypatch) -> Path:
    """A `sinfo` on PATH that prints ``text`` (Slurm's own output shape) and the SLURM_CONF it got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    out = tmp_path / "sinfo.txt"
    out.write_text(text)
    seen = tmp_path / "slurm_conf_seen"
    script = bin_dir / "sinfo"
    script.write_text(f'#!/bin/sh\necho "$SLURM_CONF" > {seen}\ncat {out}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return seen


def test_golden_export_leaves_out_an_operators_drain_and_names_it(tmp_path, monkeypatch):
    """An operator drained gpu001 ("DIMM reseat pending"): the hostfile a trainer launches with
    listed it. Now it is among the excluded with Slurm's reason, and it stays golden in the store;
    gpu003 (down, not responding) likewise. ``--ignore-scheduler`` keeps the old export."""
    seen = _fake_sinfo(tmp_path, SINFO_VIEW, monkeypatch)
    fleet = FleetRack(tmp_path, {"slurm_conf": "/etc/slurm-lab/slurm.conf"})
    for node in NODES:
        fleet.results(node)
    res = fleet.run("golden", "--rack", RACK, "--format", "slurm")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-1] == "gpu[002,004]"
    assert seen.read_text().strip() == "/etc/slurm-lab/slurm.conf"
    assert (
        "excluded gpu001 (golden): not run by the scheduler: drained in Slurm by root: DIMM reseat pending"
        in res.stderr
    )
    assert "excluded gpu003 (golden): not run by the scheduler: down* in Slurm: Not responding" in res.stderr
    assert {n: fleet.store.get_node(n).state for n in NODES} == dict.fromkeys(NODES, "golden")
    doc = json.loads(fleet.run("golden", "--rack", RACK, "--format", "json").stdout)
    assert [n["name"] for n in doc["nodes"]] == ["gpu002", "gpu004"]
    excluded = {n["name"]: n for n in doc["excluded"]}
    assert excluded["gpu001"]["state"] == "golden"
    assert excluded["gpu001"]["reasons"] == [
        "not run by the scheduler: drained in Slurm by root: DIMM reseat pending"
    ]
    old = fleet.run("golden", "--rack", RACK, "--format", "slurm", "--ignore-scheduler")
    assert old.exit_code == 0, old.output
    assert old.stdout.splitlines()[-1] == "gpu[001-004]"


def test_a_rack_that_names_its_slurm_is_not_exported_without_its_view(tmp_path, monkeypatch):
    """The rack says which Slurm runs it (``slurm_conf``) and `sinfo` fails: no export (a list
    with drained nodes in it would go to a trainer); without ``slurm_conf`` a Slurm that cannot be
    read is said, and the export is made from the store alone."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text(
        "#!/bin/sh\necho 'sinfo: error: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    (bin_dir / "sinfo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    fleet = FleetRack(tmp_path / "a", {"slurm_conf": "/etc/slurm-lab/slurm.conf"})
    fleet.results("gpu002")
    res = fleet.run("golden", "--rack", RACK, "--format", "slurm")
    assert res.exit_code == 1, res.output  # a user error, one line
    assert "Unable to contact slurm controller" in res.stderr and "--ignore-scheduler" in res.stderr
    plain = FleetRack(tmp_path / "b")
    plain.results("gpu002")
    res = plain.run("golden", "--rack", RACK, "--format", "slurm")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-1] == "gpu002"
    assert "the scheduler's view was not read" in res.stderr

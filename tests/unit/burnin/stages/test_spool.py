"""The spool (burnin.stages.spool): result files written and read back, the watcher, and a task's
results merged on the controller, against the runner's own judgement of the same stage.

Real files in a temporary directory; the task runs the real preflight batch on this machine."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.checks.base import CommandOutput
from burnin.result import Action, Result, Verdict, critical, warning
from burnin.stages import spool as spool_mod
from burnin.stages import stage_checks
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import BurninRun, record_for
from burnin.stages.spool import (
    CONTROLLER_JUDGED,
    INGESTED,
    SpoolError,
    SpoolProblem,
    SpoolResult,
    SpoolWatcher,
    digest,
    merge_judged,
    parse_result,
    result_document,
    result_name,
    run_dir,
    run_task,
    write_result,
)
from tests.fleet import walk_to
from tests.paths import SAMPLES
from tests.profiles import SHIPPED_DIR, SHIPPED_NAME, shipped

JUDGED = [
    (
        Result.judged(
            "gpu_inventory",
            [critical("GPU 4 is gone", Action.RESEAT, "Attached GPUs : 7", "GPU 4 (00000000:97:00.0)")],
            {"count": 7, "uuids": ["GPU-1", "GPU-2"]},
        ),
        "Attached GPUs : 7\n",
    ),
    (Result.unknown("dcgm_diag", "timed out after 600 s"), ""),
    (Result.judged("disk_usage", [warning("/ is 91% full")], {"used_pct": 91.0}), "df\n--- stderr ---\nw\n"),
]


def doc(run_id: int = 7, node: str = "node01", stage: str = "preflight", **kw) -> dict:
    outputs = {"clock_offset": CommandOutput("1795512619.937082387\n", rc=0)}
    return result_document(run_id, node, stage, JUDGED, outputs, profile_sha256="ab", overrides=["x=1"], **kw)


def test_a_result_file_reads_back_as_the_task_judged_it(tmp_path: Path) -> None:
    path = write_result(tmp_path, doc(window=(1.0, 2.0), host="gpu-17", error=""))
    assert path.name == "7-node01-preflight.json"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind
    got = parse_result(path.read_bytes(), str(path))
    assert (got.run_id, got.node, got.stage, got.host) == (7, "node01", "preflight", "gpu-17")
    assert got.judged == JUDGED  # results, findings and evidence exactly as judged
    shared = [*JUDGED, (Result.judged("gpu_ecc"), "Attached GPUs : 7\n")]  # one output, two checks
    again = result_document(7, "node01", "preflight", shared, {})
    assert again["texts"].count("Attached GPUs : 7\n") == 1 and again["results"][3]["evidence"] == 0
    assert parse_result(json.dumps(again), "f").judged == shared
    assert got.outputs["clock_offset"].stdout == "1795512619.937082387\n"
    assert got.profile_sha256 == "ab" and got.overrides == ("x=1",)


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda d: d["results"][0].pop("verdict"), "results[0]: field 'verdict' is missing"),
        (lambda d: d["results"][1].update(verdict="GREAT"), "'GREAT', not one of PASS"),
        (lambda d: d["results"][0]["findings"][0].update(severity="loud"), "findings[0]"),
        (lambda d: d.update(run_id="7"), "field 'run_id' must be int, got str"),
        (lambda d: d.update(format="other/1"), "field 'format' is 'other/1'"),
        (lambda d: d.update(stage="ib"), "not a single-node stage"),
        (lambda d: d.update(node="../etc"), "field 'node' is '../etc'"),
        (lambda d: d["outputs"]["clock_offset"].update(rc="0"), "field 'rc' must be an integer"),
        (lambda d: d.pop("error"), "field 'error' is missing"),
        (
            lambda d: d["results"][2].update(evidence=9),
            "results[2] (disk_usage): field 'evidence' is 9, not an index",
        ),
        (lambda d: d["texts"].append(3), "field 'texts' must be a list of strings"),
    ],
)
def test_a_bad_result_file_is_refused_naming_the_file_and_the_field(edit, says) -> None:
    data = json.loads(json.dumps(doc()))
    edit(data)
    with pytest.raises(SpoolError) as err:
        parse_result(json.dumps(data), "/spool/run-7/7-node01-preflight.json")
    assert "/spool/run-7/7-node01-preflight.json" in str(err.value) and says in str(err.value)


def test_half_a_file_is_not_json_and_says_so() -> None:
    text = json.dumps(doc())[:200]
    with pytest.raises(SpoolError, match=r"^f\.json: not JSON"):
        parse_result(text, "f.json")


def test_a_node_name_that_is_not_one_makes_no_file_name() -> None:
    assert result_name(3, "gpu-0017.rack2", "gpu") == "3-gpu-0017.rack2-gpu.json"
    with pytest.raises(SpoolError, match="not a node name"):
        result_name(3, "a/b", "gpu")


def test_the_watcher_hands_each_file_over_once_as_it_appears(tmp_path: Path) -> None:
    watcher = SpoolWatcher(tmp_path, 7, "gpu", ["node01", "node02", "node03"])
    assert watcher.poll() == [] and watcher.waiting == ["node01", "node02", "node03"]
    (tmp_path / ".7-node01-gpu.json.4242.tmp").write_text('{"format": ')  # a writer killed midway
    write_result(tmp_path, doc(node="node01", stage="preflight"))  # another stage's file
    write_result(tmp_path, doc(run_id=8, node="node01", stage="gpu"))  # another run's
    (tmp_path / "notes.txt").write_text("stray")
    assert watcher.poll() == []
    write_result(tmp_path, doc(node="node01", stage="gpu"))
    (first,) = watcher.poll()
    assert isinstance(first, SpoolResult) and first.node == "node01"
    assert watcher.poll() == [] and watcher.waiting == ["node02", "node03"]
    # A file whose name is right and whose content is another node's: a problem, named.
    (tmp_path / "7-node02-gpu.json").write_text(json.dumps(doc(node="node03", stage="gpu")))
    (tmp_path / "7-node03-gpu.json").write_text("{")
    problems = watcher.poll()
    assert all(isinstance(p, SpoolProblem) for p in problems)
    by = {p.node: p.message for p in problems}
    assert "node is 'node03', expected 'node02'" in by["node02"] and "not JSON" in by["node03"]
    assert watcher.waiting == []


def test_a_file_over_the_bound_is_not_read(tmp_path: Path, monkeypatch) -> None:
    """The controller never reads more of one file than a task can write (bringup.local.capture's rule)."""
    monkeypatch.setattr(spool_mod, "MAX_FILE_BYTES", 2 * 1024 * 1024)
    with open(tmp_path / "7-node01-gpu.json", "wb") as f:
        f.truncate(3 * 1024 * 1024)  # sparse: nothing is written
    (problem,) = SpoolWatcher(tmp_path, 7, "gpu", ["node01"]).poll()
    assert isinstance(problem, SpoolProblem) and "3.0 MB, over the 2.0 MB a result may be" in problem.message


def test_a_file_moves_to_ingested_only_after_its_consumer_committed_it(tmp_path: Path) -> None:
    for node in ("node01", "node02"):
        write_result(tmp_path, doc(node=node, stage="gpu"))
    watcher = SpoolWatcher(tmp_path, 7, "gpu", ["node01", "node02"])
    arrivals = watcher.arrivals()
    first = next(arrivals)
    # The consumer crashes while committing the first: nothing was moved, nothing is lost ...
    arrivals.close()
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["7-node01-gpu.json", "7-node02-gpu.json"]
    # ... and a new watcher (the controller again) finds both, once each.
    again = SpoolWatcher(tmp_path, 7, "gpu", ["node01", "node02"])
    taken = [item.node for item in again.arrivals()]
    assert taken == ["node01", "node02"] and first.node == "node01"
    assert sorted(p.name for p in (tmp_path / INGESTED).iterdir()) == [
        "7-node01-gpu.json",
        "7-node02-gpu.json",
    ]
    assert list(tmp_path.glob("*.json")) == [] and list(again.arrivals()) == []


def test_files_come_in_lists_the_consumer_commits_whole_and_move_only_after(tmp_path: Path) -> None:
    """The Slurm path's ingest was one transaction per node; the watcher now hands over
    what is in as lists (one transaction each), and a list's files move to ingested/ only once
    the consumer asks for the next list, that is once it has committed this one."""
    nodes = ["node01", "node02", "node03"]
    for node in nodes:
        write_result(tmp_path, doc(node=node, stage="gpu"))
    batches = SpoolWatcher(tmp_path, 7, "gpu", nodes).batches(most=2)
    first = next(batches)
    assert [item.node for item in first] == ["node01", "node02"]
    assert not (tmp_path / INGESTED).exists()  # being committed: nothing moved yet
    second = next(batches)
    assert [item.node for item in second] == ["node03"]
    assert sorted(p.name for p in (tmp_path / INGESTED).iterdir()) == [
        "7-node01-gpu.json",
        "7-node02-gpu.json",
    ]
    batches.close()  # the consumer crashes while committing the second list: its file stays
    assert [p.name for p in tmp_path.glob("*.json")] == ["7-node03-gpu.json"]


def batch_dir(text: str) -> str:
    """Evidence with the batch's temporary directory (in a missing tool's error) made one."""
    return re.sub(r"/tmp/tmp\.\w+/", "/tmp/BATCH/", text)


@pytest.fixture
def store(tmp_path) -> FleetStore:
    s = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    s.enroll("n1", rack="r", profile=SHIPPED_NAME)
    walk_to(s, "n1", State.BURNIN)
    return s


def test_a_task_merged_on_the_controller_matches_the_runners_own_judgement(tmp_path, store) -> None:
    """The same preflight on this machine, once as the runner runs it (local batch, judged and
    saved by BurninRun) and once as a Slurm task (run_task, merge_judged): same checks, same
    verdicts, findings and evidence; the clock offset judged against the controller's window."""
    profile = shipped()
    record = record_for({"event_log": [], "event_log_read_at": "2026-11-24T08:00:00+00:00"}, None)
    run = store.start_run("burnin", "r")
    (outcome,) = BurninRun(store, run.id, ["preflight"]).run([NodeJob("n1", profile, None, record)])
    saved = {r.check: r for r in store.latest_results("n1")}
    evidence = store.evidence_of(list(saved.values()))

    spool = tmp_path / "spool"
    (run_dir(spool, 9) / "profiles").mkdir(parents=True)
    profile_file = run_dir(spool, 9) / "profiles" / f"{SHIPPED_NAME}.yml"
    profile_file.write_bytes((SHIPPED_DIR / f"{SHIPPED_NAME}.yml").read_bytes())
    submitted = time.time()
    task = run_task(spool, 9, "n1", "preflight", profile_file)
    reported = parse_result(task.path.read_bytes(), str(task.path))
    assert reported.profile_sha256 == digest(profile_file.read_bytes())
    assert {r.check for r, _ in reported.judged} & (CONTROLLER_JUDGED | {"bmc_event_log"}) == set()
    plan = stage_checks("preflight", profile)
    merged = merge_judged(plan, profile, reported, record, (submitted, time.time()))

    assert (
        [r.check for r, _ in merged] == [c.name for c in plan] == [r.check for r in outcome.stages[0].results]
    )
    for result, text in merged:
        want = saved[result.check]
        assert result.verdict.value == want.verdict, result
        assert [f.to_dict() for f in result.findings] == want.findings, result.check
        # This machine's clock, free disk space and kernel log change from one reading to the next.
        if result.check not in ("clock_offset", "disk_usage", "kernel_log"):
            assert batch_dir(text) == batch_dir(evidence.get(want.id) or ""), result.check
    by = {r.check: r for r, _ in merged}
    assert by["clock_offset"].verdict is Verdict.PASS and by["clock_offset"].metrics["offset_s"] == 0.0
    assert by["bmc_event_log"].verdict.value == saved["bmc_event_log"].verdict


def test_a_clock_off_by_a_minute_fails_through_the_spool_as_over_ssh() -> None:
    profile = shipped()
    plan = [c for c in stage_checks("preflight", profile) if c.name == "clock_offset"]
    reported = SpoolResult(
        "/s/7-n1-preflight.json",
        7,
        "n1",
        "preflight",
        [],
        {"clock_offset": CommandOutput("1000.000000000\n")},
    )
    ((result, text),) = merge_judged(plan, profile, reported, {}, (1060.0, 1065.0))
    assert result.verdict is Verdict.FAIL and "-60.0 s off" in result.findings[0].message
    assert text == "1000.000000000\n"


def test_a_check_the_task_did_not_report_is_unknown_never_a_pass() -> None:
    profile = shipped()
    plan = [c for c in stage_checks("preflight", profile) if c.name in ("disk_usage", "gpu_inventory")]
    reported = SpoolResult(
        "/s/7-n1-preflight.json", 7, "n1", "preflight", [(Result.judged("disk_usage"), "df")], error="killed"
    )
    by = {r.check: r for r, _ in merge_judged(plan, profile, reported, {}, (0.0, 1.0))}
    assert by["disk_usage"].verdict is Verdict.PASS
    assert by["gpu_inventory"].verdict is Verdict.UNKNOWN and "killed" in by["gpu_inventory"].reason


def test_a_task_refuses_a_spool_that_is_not_mounted(tmp_path) -> None:
    with pytest.raises(Exception, match="does not exist here"):
        run_task(tmp_path / "nowhere", 3, "n1", "preflight", SHIPPED_DIR / f"{SHIPPED_NAME}.yml")


def test_a_check_that_reads_the_node_record_is_judged_on_the_controller_beside_it(tmp_path) -> None:
    """bmc_gpus_seen compares the BMC's GPU list (the node's record, which only the controller
    has) with nvidia-smi: the task ships its raw output, the controller judges it with the record,
    as over SSH. A GPU the BMC lists and nvidia-smi does not fails, naming its slot."""
    profile = shipped()
    spool = tmp_path / "spool"
    (run_dir(spool, 9) / "profiles").mkdir(parents=True)
    profile_file = run_dir(spool, 9) / "profiles" / f"{SHIPPED_NAME}.yml"
    profile_file.write_bytes((SHIPPED_DIR / f"{SHIPPED_NAME}.yml").read_bytes())
    task = run_task(spool, 9, "n1", "preflight", profile_file)
    reported = parse_result(task.path.read_bytes(), str(task.path))
    assert "bmc_gpus_seen" not in {r.check for r, _ in reported.judged}
    assert "bmc_gpus_seen" in reported.outputs  # the raw nvidia-smi -q, judged on the controller
    plan = [c for c in stage_checks("preflight", profile) if c.name == "bmc_gpus_seen"]
    lost = {"slot": "GPU.SXM.9", "serial": "NOT-IN-NVIDIA-SMI", "model": "NVIDIA H100 80GB HBM3"}
    record = record_for({"gpus": [lost], "discovered_at": "2026-11-24T08:00:00+00:00"}, None)
    # This machine has no nvidia-smi: the node's answer is a real 8x H100 capture.
    smi = (SAMPLES / "nvidia_smi_q_8xh100_535_183.txt").read_text()
    shipped_raw = SpoolResult(
        "/s/9-n1-preflight.json", 9, "n1", "preflight", [], {"bmc_gpus_seen": CommandOutput(smi)}
    )
    ((result, _),) = merge_judged(plan, profile, shipped_raw, record, (0.0, 1.0))
    assert result.verdict is Verdict.FAIL and "GPU.SXM.9" in result.findings[0].message

"""An output over the cap: its head and tail come back marked, the check is told."""

from __future__ import annotations

import subprocess

from bringup.core.cut import MIB
from bringup.fleet.evidence import CAP_ENV
from burnin.checks.cut import told_of_cut
from burnin.result import Action, Result, Verdict, critical
from burnin.stages.batch import Job, build_script, parse_output
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import BurninRun
from tests.unit.burnin.stages.test_runner import PROFILE, Echo, store, use_checks  # noqa: F401 - fixture

FLOOD = "echo ok; head -c 10000000 /dev/zero | tr '\\0' z; echo; echo ok"


def test_an_output_over_the_cap_comes_back_as_head_and_tail_and_the_next_job_whole():
    script, token = build_script([Job("flood", FLOOD, 30), Job("after", "echo fine", 10)], "feed", cap=MIB)
    raw = subprocess.run(["bash", "-s"], input=script.encode(), capture_output=True, timeout=60).stdout
    assert len(raw) < MIB + 1000  # the node sent the cap, not 10 MB
    out = parse_output(raw, token, ["flood", "after"])
    flood = out["flood"]
    assert flood.stdout.startswith("ok\nzzz") and flood.stdout.endswith("zzz\nok\n") and not flood.error
    assert "[... output cut at 1.0 MB: 8.5 MB of 9.5 MB not kept" in flood.stdout
    assert flood.cut == "output cut at 1.0 MB: 9.5 MB printed, 8.5 MB in its middle not kept"
    assert out["after"].stdout == "fine\n" and not out["after"].cut


def test_a_cut_output_is_unknown_with_a_finding_and_kept_cut_in_the_store(monkeypatch, store):  # noqa: F811
    monkeypatch.setenv(CAP_ENV, "1")
    use_checks(
        monkeypatch,
        [Echo("flood", "s1", FLOOD), Echo("fine", "s1", "echo ok")],
    )
    run = store.start_run("burnin", "r")
    (outcome,) = BurninRun(store, run.id, ["s1"], stop_on_fail=False).run([NodeJob("n1", PROFILE, None)])
    results = {r.check: r for r in outcome.stages[0].results}
    flood = results["flood"]
    assert flood.verdict is Verdict.UNKNOWN and flood.reason.startswith(
        "output cut at 1.0 MB: 9.5 MB printed"
    )
    assert any(f.message.startswith("output cut at 1.0 MB") for f in flood.findings)
    assert results["fine"].verdict is Verdict.PASS
    saved = {r.check: r for r in store.latest_results("n1")}
    text = store.evidence(saved["flood"])
    assert len(text) < 1.1 * MIB and "output cut at 1.0 MB" in text
    assert saved["flood"].verdict == "UNKNOWN"
    assert any("output cut at 1.0 MB" in f["message"] for f in saved["flood"].findings)


def test_a_failure_the_kept_part_shows_stands():
    bad = Result.judged("c", [critical("Xid 79", Action.RESET_GPU, "NVRM: Xid 79")])
    told = told_of_cut(bad, "output cut at 4.0 MB: 100.0 MB printed, 96.0 MB in its middle not kept")
    assert told.verdict is Verdict.FAIL and told.findings[0] == bad.findings[0]
    assert told.findings[-1].message.startswith("output cut at 4.0 MB")
    assert told_of_cut(Result.judged("c"), "output cut at 4.0 MB: ...").verdict is Verdict.UNKNOWN

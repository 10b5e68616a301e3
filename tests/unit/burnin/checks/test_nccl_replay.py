"""The nccl stage's record and its replay per soak group: the stage, run against a fake mpirun
printing nccl-tests output, keeps each group's soak runs whole in its nodes' evidence; judged
again with the same profile they give the same result, with a raised floor the group fails;
a group the stage localised with trials cannot be judged again."""

from __future__ import annotations

import pytest

from bringup.profiles.load import apply_overrides
from burnin.checks.nccl_replay import RECORD_MARK, parse_record, replay
from burnin.parsers import ParseError
from burnin.result import Verdict
from tests.unit.burnin.stages.test_nccl import _jobs, _profile, fake  # noqa: F401 - the fixture

NODES = ["node01", "node02", "node03", "node04"]


def test_the_soak_runs_are_kept_whole_and_judge_the_same_again(fake):  # noqa: F811
    run, _, _ = fake
    profile = _profile()
    results = run(_jobs(4, profile))
    for node in NODES:
        result, evidence = results[node][0]
        assert evidence.index("=== soak group 1") < evidence.index(RECORD_MARK)
        doc = parse_record(evidence)
        assert doc["group"] == NODES and not doc["soak_failed"] and len(doc["soak"]) == 1
        assert "# Avg bus bandwidth" in doc["soak"][0]["text"] and doc["soak"][0]["rc"] == 0
        again = replay(doc, profile)
        assert (again.verdict, again.findings, again.metrics) == (
            result.verdict,
            result.findings,
            result.metrics,
        )


def test_a_raised_floor_fails_the_group(fake):  # noqa: F811
    run, launches, _ = fake
    profile = _profile()
    results = run(_jobs(4, profile))
    raised = apply_overrides(profile, ["floors.nccl_busbw_multi_node_gbps=400"])  # the runs moved 390
    launched = len(launches())
    for node in NODES:
        again = replay(parse_record(results[node][0][1]), raised)
        assert again.verdict is Verdict.FAIL
        messages = [f.message for f in again.findings]
        assert any("below the floor 400 GB/s" in m for m in messages)
        assert any("judged again per group (node01, node02, node03, node04)" in m for m in messages)
    assert len(launches()) == launched  # nothing ran


def test_a_localised_group_cannot_be_judged_again(fake):  # noqa: F811
    run, _, _ = fake
    profile = _profile(nccl_group_size=2)
    results = run(_jobs(6, profile), bad="node05", mode="slow")
    docs = {n: parse_record(judged[0][1]) for n, judged in results.items()}
    failed = {n for n, d in docs.items() if d["soak_failed"]}
    assert "node05" in failed and len(failed) == 2  # node05's group of two
    for node, doc in docs.items():
        if node in failed:
            with pytest.raises(ParseError, match="localised it with trials"):
                replay(doc, profile)
        else:
            assert replay(doc, profile).verdict is Verdict.PASS


def test_evidence_without_a_whole_record():
    with pytest.raises(ParseError, match="no nccl record"):
        parse_record("=== soak group 1 iteration 1 all_reduce_perf: PASS on a, b ===\n")
    with pytest.raises(ParseError, match="not whole JSON"):
        parse_record(f"{RECORD_MARK}\n" + '{"group": ["a"], "soak": [')


def test_a_soak_of_two_tests_is_numbered_by_iteration_again(fake):  # noqa: F811
    """An iteration runs each of diag.nccl_tests: the record says how many, so a rejudge numbers
    the two runs of iteration 1 as the stage did, not as iterations 1 and 2."""
    run, _, _ = fake
    profile = _profile(nccl_tests="[all_reduce_perf, all_gather_perf]")
    results = run(_jobs(4, profile))
    result, evidence = results["node01"][0]
    assert [row["index"] for row in result.metrics["iterations"]] == [1, 1]
    again = replay(parse_record(evidence), profile)
    assert again.metrics == result.metrics

"""NCCL iteration and soak judgement on the real nccl-tests captures, hangs, crashes and floors;
and the per-node verdicts a finished localisation gives."""

from __future__ import annotations

import json

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.nccl import (
    Hang,
    busbw_floor,
    judge_output,
    judge_soak,
    largest_busbw,
    node_results,
)
from burnin.parsers.nccl_tests import parse_nccl_tests
from burnin.plan.nccl_groups import Localizer
from burnin.result import Action, Result, Severity, Verdict, critical
from tests.paths import REPO
from tests.unit.burnin.parsers._samples import load

PROFILE, _ = load_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")
DEGRADED = load("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt")
A100_OK = load("nccl_tests_all_reduce_perf_8xa100_ok.txt")


def _criticals(result: Result) -> list[tuple[str, Action]]:
    return [(f.message, f.action) for f in result.findings if f.severity is Severity.CRITICAL]


def test_floor_from_profile_by_group_size_and_overridable():
    assert (
        busbw_floor(PROFILE, 1) == 460 and busbw_floor(PROFILE, 2) == 360 and busbw_floor(PROFILE, 64) == 360
    )
    lab = apply_overrides(PROFILE, ("floors.nccl_busbw_multi_node_gbps=0.05",))
    assert busbw_floor(lab, 4) == 0.05 and busbw_floor(lab, 1) == 460


def test_largest_sizes_not_the_average_line():
    run = parse_nccl_tests(DEGRADED)
    busbw, rows = largest_busbw(run)
    # the two largest sizes (8 GiB, 16 GiB), both halves: not the 33.4 'Avg bus bandwidth'
    assert busbw == pytest.approx((89.10 + 89.16 + 89.24 + 89.24) / 4, abs=1e-3)
    assert [r["size"] for r in rows] == [8589934592, 17179869184]
    assert largest_busbw(run, 1)[0] == pytest.approx(89.24)


def test_degraded_two_nodes_fails_against_the_multi_node_floor():
    r = judge_output(DEGRADED, busbw_floor(PROFILE, 2))
    assert r.verdict is Verdict.FAIL
    ((message, action),) = _criticals(r)
    assert "89.185 GB/s" in message and "below the floor 360 GB/s" in message and action is Action.RESEAT
    assert r.metrics["busbw_gbps"] == pytest.approx(89.185) and r.metrics["avg_busbw_gbps"] == 33.4128
    assert r.metrics["hosts"] == ["lccn09", "lccn19"] and r.metrics["wrong"] == 0
    # the same output against a floor it meets passes
    assert judge_output(DEGRADED, 80.0).verdict is Verdict.PASS


def test_single_node_a100_passes_a100_floor_fails_h100_floor():
    assert judge_output(A100_OK, 228).verdict is Verdict.PASS  # docs/reference.md, NCCL: A100 8 GB floor 228
    assert judge_output(A100_OK, busbw_floor(PROFILE, 1)).verdict is Verdict.FAIL


def test_no_floor_is_recorded_not_passed_silently():
    r = judge_output(A100_OK, None)
    assert r.verdict is Verdict.PASS
    assert any("no floor" in f.message for f in r.findings)


def test_out_of_bounds_old_format_is_data_corruption():
    r = judge_output(load("nccl_tests_all_gather_out_of_bounds_FAILED_old_format.txt"), 100)
    assert r.verdict is Verdict.FAIL
    assert [a for _, a in _criticals(r)] == [Action.RMA]


def test_wrong_elements_fail_even_at_full_bandwidth():
    text = DEGRADED.replace(
        "   360942   47.60   89.24      0   360965", "   360942   47.60   89.24      7   360965"
    )
    r = judge_output(text, 80.0)
    assert r.verdict is Verdict.FAIL and r.metrics["wrong"] == 7
    ((message, action),) = _criticals(r)
    assert "7 wrong elements" in message and "16 GiB" in message and action is Action.RMA


def test_fabric_manager_down_is_reconfigure():
    r = judge_output(load("nccl_tests_all_reduce_8xh100_cuda_system_not_initialized.txt"), 460)
    assert r.verdict is Verdict.FAIL
    ((message, action),) = _criticals(r)  # the ' .. pid: Test failure' trace adds nothing
    assert "fabricmanager" in message and action is Action.RECONFIGURE


def test_nccl_failure_and_warn_lines_recorded():
    r = judge_output(load("nccl_tests_test_nccl_failure_unhandled_cuda_error_with_warn.txt"), 460)
    assert r.verdict is Verdict.FAIL
    assert _criticals(r) == [
        (
            "nccl-tests NCCL failure on GENOA-06: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
            Action.REBOOT,
        )
    ]
    warns = [f for f in r.findings if f.severity is Severity.INFO]
    assert [f.message for f in warns] == [
        "NCCL WARN on GENOA-06: Could not find a path for pattern 4, falling back to simple order",
        "NCCL WARN on GENOA-06: Could not find a path for pattern 1, falling back to simple order",
        "NCCL WARN on GENOA-06: Cuda failure 1 'invalid argument'",
    ]
    assert r.metrics["warns"] == 3


CUT = DEGRADED[: DEGRADED.index("   536870912")]


def test_hang_names_the_silent_ranks_and_where_it_stopped():
    r = judge_output(CUT, 360, hang=Hang(600, ("lccn19",), last_output="   268435456  ..."), seconds=612.5)
    assert r.verdict is Verdict.FAIL
    (f,) = [f for f in r.findings if f.severity is Severity.CRITICAL]
    assert f.message == "hang: no progress for 600 s after the 256 MiB row; silent: lccn19 (ranks 8-15)"
    assert f.action is Action.REBOOT and f.subject == "lccn19" and f.evidence == "268435456  ..."
    assert r.metrics["hang"] == {"timeout_s": 600, "silent_hosts": ["lccn19"]}
    assert r.metrics["seconds"] == 612.5 and r.metrics["complete"] is False
    # rows before the hang were fast enough: the hang is the only finding that fails it
    assert len(_criticals(r)) == 1


def test_hang_before_any_output_still_fails():
    r = judge_output("", 360, hang=Hang(300))
    assert r.verdict is Verdict.FAIL
    assert "before the first result row" in r.findings[0].message
    assert "could not tell which ranks" in r.findings[0].message


def test_cut_short_without_hang_crash_or_unknown():
    crashed = judge_output(CUT, 360, rc=137)
    assert crashed.verdict is Verdict.FAIL and "exited 137" in crashed.findings[0].message
    unknown = judge_output(CUT, 50)
    assert unknown.verdict is Verdict.UNKNOWN and "footer" in unknown.reason


def test_unparseable_output_is_unknown_never_pass():
    r = judge_output("bash: all_reduce_perf: command not found\n", 360, rc=127)
    assert r.verdict is Verdict.UNKNOWN and "could not parse" in r.reason


def test_complete_result_with_nonzero_exit_warns():
    r = judge_output(DEGRADED, 80.0, rc=1)
    assert r.verdict is Verdict.WARN


def test_metrics_are_json_able():
    r = judge_output(CUT, 360, hang=Hang(600, ("lccn19",)))
    json.dumps(r.to_dict())
    soak = judge_soak([judge_output(DEGRADED, 80.0), r])
    json.dumps(soak.to_dict())


def _it(busbw: float | None, verdict: Verdict = Verdict.PASS, findings=(), seconds: float = 60.0) -> Result:
    return Result(
        "nccl", verdict, {"busbw_gbps": busbw, "wrong": 0, "seconds": seconds, "floor_gbps": 50}, findings
    )


def test_soak_all_pass_with_metrics_per_iteration():
    soak = judge_soak([_it(90.0), _it(91.0), _it(89.5)])
    assert soak.verdict is Verdict.PASS and soak.check == "nccl_soak"
    assert soak.metrics["iterations"] == [
        {"index": 1, "busbw_gbps": 90.0, "wrong": 0, "seconds": 60.0, "verdict": "PASS"},
        {"index": 2, "busbw_gbps": 91.0, "wrong": 0, "seconds": 60.0, "verdict": "PASS"},
        {"index": 3, "busbw_gbps": 89.5, "wrong": 0, "seconds": 60.0, "verdict": "PASS"},
    ]
    assert (soak.metrics["busbw_min_gbps"], soak.metrics["busbw_median_gbps"]) == (89.5, 90.0)
    assert soak.metrics["failed_iterations"] == 0 and soak.metrics["floor_gbps"] == 50


def test_soak_fails_on_one_bad_iteration_and_groups_repeated_findings():
    hang = judge_output(CUT, 50, hang=Hang(600, ("lccn19",)))
    good = judge_output(DEGRADED, 50)
    soak = judge_soak([good, hang, good, hang])
    assert soak.verdict is Verdict.FAIL and soak.metrics["failed_iterations"] == 2
    (f,) = [f for f in soak.findings if f.severity is Severity.CRITICAL]
    assert f.message.startswith("2 of 4 iterations (2, 4): hang: no progress for 600 s")
    assert [row["verdict"] for row in soak.metrics["iterations"]] == ["PASS", "FAIL", "PASS", "FAIL"]


def test_soak_bandwidth_dip_is_a_warning():
    soak = judge_soak([_it(90.0), _it(90.5), _it(60.0), _it(91.0), _it(90.2)])
    assert soak.verdict is Verdict.WARN
    assert "60 GB/s in iteration 3" in soak.findings[0].message


def test_soak_unknown_iteration_makes_a_pass_unknown():
    soak = judge_soak([_it(90.0), Result.unknown("nccl", "could not parse"), _it(90.0)])
    assert soak.verdict is Verdict.UNKNOWN and "iteration 2 could not be judged" in soak.reason
    assert judge_soak([]).verdict is Verdict.UNKNOWN


def test_node_results_from_a_localisation():
    nodes = [f"node{i:02d}" for i in range(8)]
    loc = Localizer(nodes, 4)
    trial_results = {}
    bad = {"node05"}
    while tests := loc.next_tests():
        for test in tests:
            passed = not test & bad
            trial = loc.record(test, passed, "" if passed else "hang after 600 s")
            trial_results[trial.index] = (
                judge_output(DEGRADED, 50)
                if passed
                else judge_output(CUT, 50, hang=Hang(600, tuple(test & bad)))
            )
    results = node_results(loc, trial_results)
    assert set(results) == set(nodes)
    culprit = results["node05"]
    assert culprit.verdict is Verdict.FAIL and culprit.check == "nccl_localise"
    (f,) = culprit.findings
    assert f.subject == "node05" and f.action is Action.REBOOT  # from the hang of its direct trials
    assert "FAILED (hang after 600 s)" in f.evidence and culprit.metrics["confirmed"] is True
    assert all(results[n].verdict is Verdict.PASS for n in nodes if n != "node05")


def test_node_results_a_lone_anchor_beside_a_culprit_warns():
    """A nightly's only golden partner beside a bad repaired node: the node is blamed; the partner,
    proven before and with nothing against it, passed no run of its own: WARN (still passing),
    not PASS and not UNKNOWN (which would take a healthy golden node out of the list)."""
    loc = Localizer(["s", "g"], 0, anchors=["g"])
    while tests := loc.next_tests():
        for test in tests:
            loc.record(test, False)
    results = node_results(loc)
    assert results["s"].verdict is Verdict.FAIL
    (f,) = results["g"].findings
    assert results["g"].verdict is Verdict.WARN and f.action is Action.MONITOR
    assert "passed no trial of its own" in f.message and "explained by s" in f.message


def test_node_results_unresolved_and_data_corruption_action():
    loc = Localizer(["a", "b"], 0)
    (test,) = loc.next_tests()
    loc.record(test, False)
    assert loc.next_tests() == [] and loc.done
    results = node_results(loc)
    assert {n: r.verdict for n, r in results.items()} == {"a": Verdict.UNKNOWN, "b": Verdict.UNKNOWN}
    assert "could not be told apart from b" in results["a"].reason

    loc = Localizer(["a", "b", "c", "d"], 0)
    corrupt = judge_output(
        DEGRADED.replace("   360942   47.60   89.24      0", "   360942   47.60   89.24      9"), 50
    )
    results_by_trial = {}
    while tests := loc.next_tests():
        for test in tests:
            t = loc.record(test, "c" not in test)
            results_by_trial[t.index] = corrupt if "c" in test else judge_output(DEGRADED, 50)
    results = node_results(loc, results_by_trial)
    assert results["c"].verdict is Verdict.FAIL and results["c"].findings[0].action is Action.RMA
    assert [results[n].verdict for n in "abd"] == [Verdict.PASS] * 3


def test_soak_numbers_iterations_from_1_as_its_progress_line_does():
    """The stage's progress line says 'group 1 iteration 1 all_reduce_perf' for the first run; the
    judgement and the report's chart name that run iteration 1 too (not 0)."""
    soak = judge_soak([_it(90.0), _it(90.5), _it(60.0), _it(91.0), _it(90.2)])
    assert [row["index"] for row in soak.metrics["iterations"]] == [1, 2, 3, 4, 5]
    assert "60 GB/s in iteration 3 " in soak.findings[0].message
    hang = judge_output(CUT, 50, hang=Hang(600, ("lccn19",)))
    failed = judge_soak([_it(90.0), hang])
    assert any(f.message.startswith("iteration 2: hang") for f in failed.findings), failed.findings


def test_a_slow_first_soak_iteration_is_a_warm_up_not_instability():
    """The demo's healthy nodes all got 'bus bandwidth unstable over the soak: ... in iteration 0':
    the group's first run (its first connections, right after the previous stage's load) measured
    low, the steady ones did not. The first iteration is judged against the floor like any other,
    not against the soak's median."""
    soak = judge_soak([_it(0.12), _it(0.19), _it(0.18), _it(0.19)])
    assert soak.verdict is Verdict.PASS, soak.findings
    assert soak.metrics["busbw_min_gbps"] == 0.12  # still reported
    low = critical("bus bandwidth 0.03 GB/s at the largest sizes is below the floor 0.04 GB/s", Action.RESEAT)
    below_floor = judge_soak([_it(0.03, Verdict.FAIL, (low,)), _it(0.19), _it(0.18)])
    assert below_floor.verdict is Verdict.FAIL  # a warm-up under the floor still fails
    later_dip = judge_soak([_it(0.19), _it(0.19), _it(0.12), _it(0.19)])
    assert later_dip.verdict is Verdict.WARN and "iteration 3" in later_dip.findings[0].message


def test_soak_of_two_tests_numbers_iterations_not_runs():
    """Each soak iteration runs every test of diag.nccl_tests: runs 3 and 4 are iteration 2."""
    soak = judge_soak([_it(90.0), _it(40.0), _it(90.0), _it(40.0)], per_iteration=2)
    assert [row["index"] for row in soak.metrics["iterations"]] == [1, 1, 2, 2]
    assert soak.metrics["iterations_run"] == 2


def test_the_steadiness_a_soak_is_held_to_is_the_profiles():
    """The lab's TCP links waver by a fifth between iterations (the demo measured 0.155 to 0.198
    GB/s): held to a fabric's 85% they warn on healthy nodes; its demo sets
    floors.nccl_busbw_steady_fraction=0.5."""
    lab = [_it(0.19), _it(0.198), _it(0.155), _it(0.198)]
    assert judge_soak(lab).verdict is Verdict.WARN  # 0.155 < 0.85 x 0.198
    assert judge_soak(lab, steady_fraction=0.5).verdict is Verdict.PASS
    assert (
        judge_soak([_it(0.19), _it(0.198), _it(0.09), _it(0.198)], steady_fraction=0.5).verdict
        is Verdict.WARN
    )


def test_text_closed_needs_the_concluding_line_once_the_run_announced_itself() -> None:
    from burnin.checks.nccl import text_closed

    footer = "# Avg bus bandwidth    : 480.1\n"
    assert text_closed(f"{footer}#\n")  # before 2.19: the lone '#'
    assert not text_closed(footer)  # stopped at the footer
    started = "# Collective test starting: all_reduce_perf\n"
    assert not text_closed(f"{started}{footer}#\n")  # 2.19+: cut between '#' and its conclusion
    assert text_closed(f"{started}{footer}#\n# Collective test concluded: all_reduce_perf\n")

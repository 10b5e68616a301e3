"""The counters half of `burnin watch`: two readings and the seconds between them -> findings."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from burnin.parsers.nvlink_errors import parse_nvlink_errors
from burnin.result import Action, Severity, Verdict
from burnin.service.watch_rates import (
    RateLimits,
    judge_rates,
    nvlink_reading,
    rates_result,
    rises,
    saturated,
)
from tests.unit.burnin.parsers._samples import load

LIMITS = RateLimits()  # the profile's defaults: 120 symbol errors/h, 300 recoveries/h, no link down
SYM = "ib:mlx5_0/1:symbol_error"
REC = "ib:mlx5_0/1:link_error_recovery"
DOWN = "ib:mlx5_0/1:link_downed"
AER_FATAL = "aer:0000:53:00.0:fatal"
AER_COR = "aer:0000:53:00.0:correctable"
NVL_REPLAY = "nvlink:3/7:replay_errors"
NVL_CRC = "nvlink:3/7:crc_errors"
NVL_REC = "nvlink:00000008:06:00.0/2:recovery_errors"  # a GPU nvidia-smi names by its PCI address

counters = st.dictionaries(
    st.sampled_from(
        [SYM, REC, DOWN, AER_FATAL, AER_COR, "aer:0000:53:00.0:nonfatal", NVL_REPLAY, NVL_CRC, NVL_REC]
    ),
    st.integers(min_value=0, max_value=1 << 32),
)


def test_symbol_errors_over_120_an_hour_drain_and_under_do_not():
    assert judge_rates({SYM: 0}, {SYM: 1}, 30, LIMITS) == []  # 120/h: at the ceiling, not over
    [f] = judge_rates({SYM: 0}, {SYM: 2}, 30, LIMITS)  # 240/h
    assert f.severity is Severity.CRITICAL and f.message.startswith(
        "IB mlx5_0/1: 2 symbol errors in 30 s (240/h"
    )
    assert judge_rates({SYM: 0}, {SYM: 2}, 3600, LIMITS) == []  # the same rise over an hour is 2/h


def test_a_link_down_drains_and_recoveries_are_a_rate():
    [down] = judge_rates({DOWN: 5}, {DOWN: 6}, 30, LIMITS)
    assert "link went down 1 time(s)" in down.message
    assert judge_rates({REC: 0}, {REC: 2}, 30, LIMITS) == []  # 240/h
    assert len(judge_rates({REC: 0}, {REC: 3}, 30, LIMITS)) == 1  # 360/h


def test_aer_uncorrectable_drains_correctable_only_warns_when_set():
    [fatal] = judge_rates({AER_FATAL: 0}, {AER_FATAL: 1}, 30, LIMITS)
    assert fatal.severity is Severity.CRITICAL and fatal.subject == "0000:53:00.0"
    assert judge_rates({AER_COR: 0}, {AER_COR: 1000}, 30, LIMITS) == []  # unset: counted, not judged
    [cor] = judge_rates({AER_COR: 0}, {AER_COR: 10}, 30, RateLimits(aer_correctable_per_hour=100))
    assert cor.severity is Severity.WARNING
    assert rates_result([cor], 1, 30).verdict is Verdict.WARN
    assert rates_result([fatal, cor], 1, 30).verdict is Verdict.FAIL
    assert rates_result([], 1, 30).verdict is Verdict.PASS


def test_nvlink_replays_and_recoveries_drain_naming_the_gpu_and_link():
    """DCGM's health watch: any replay or recovery error fails."""
    [replay] = judge_rates({NVL_REPLAY: 4}, {NVL_REPLAY: 5}, 30, LIMITS)
    assert replay.severity is Severity.CRITICAL and replay.action is Action.RESET_GPU
    assert replay.message == "NVLink GPU 3 link 7: 1 replay errors in 30 s"
    assert replay.subject == "NVLink GPU 3 link 7"
    [rec] = judge_rates({NVL_REC: 0}, {NVL_REC: 2}, 30, LIMITS)
    assert rec.message.startswith("NVLink GPU 00000008:06:00.0 link 2: 2 recovery errors")
    assert judge_rates({NVL_REPLAY: 0}, {NVL_REPLAY: 3}, 30, RateLimits(nvlink_replay_errors=3)) == []


def test_nvlink_crc_errors_drain_at_100_a_second_and_warn_under():
    [fast] = judge_rates({NVL_CRC: 0}, {NVL_CRC: 3000}, 30, LIMITS)  # 100/s: DCGM's >=
    assert fast.severity is Severity.CRITICAL and "(100/s, at or over 100/s)" in fast.message
    [slow] = judge_rates({NVL_CRC: 0}, {NVL_CRC: 2999}, 30, LIMITS)
    assert slow.severity is Severity.WARNING and rates_result([slow], 1, 30).verdict is Verdict.WARN


def test_two_readings_of_nvidia_smi_nvlink_e_drain_for_gpu_3_link_7():
    before = nvlink_reading(parse_nvlink_errors(load("nvidia_smi_nvlink_e_8xh100_zero_DERIVED.txt")))
    after = nvlink_reading(
        parse_nvlink_errors(load("nvidia_smi_nvlink_e_8xh100_gpu3_link7_replays_DERIVED.txt"))
    )
    assert len(before) == len(after) == 8 * 18 * 3
    findings = judge_rates(before, after, 30, LIMITS)
    assert [(f.severity, f.message) for f in findings] == [
        (Severity.CRITICAL, "NVLink GPU 3 link 7: 4500 CRC errors in 30 s (150/s, at or over 100/s)"),
        (Severity.CRITICAL, "NVLink GPU 3 link 7: 12 replay errors in 30 s"),
    ]
    assert judge_rates(after, before, 30, LIMITS) == []  # `nvidia-smi nvlink -r` cleared them: no rise


def test_a_reset_counter_or_a_new_one_is_no_rise():
    assert rises({SYM: 500, DOWN: 1}, {SYM: 3, REC: 9, DOWN: 1}) == {}
    assert judge_rates({SYM: 500}, {SYM: 3}, 30, LIMITS) == []


def test_saturated_ib_counters_are_named():
    assert saturated({SYM: 65535, DOWN: 255, REC: 12, AER_FATAL: 255}) == [DOWN, SYM]


@given(counters, counters, st.floats(min_value=0.001, max_value=1e6))
def test_no_rise_no_finding_and_never_a_finding_on_a_fall(before, after, elapsed):
    assert judge_rates(before, before, elapsed, LIMITS) == []
    fell = {k: min(v, before.get(k, v)) for k, v in after.items()}
    assert judge_rates(before, fell, elapsed, LIMITS) == []


@given(counters, counters, st.floats(min_value=0.001, max_value=1e6), st.floats(min_value=1, max_value=100))
def test_a_longer_interval_for_the_same_rise_never_adds_a_finding(before, after, elapsed, factor):
    """Rates: the same rises spread over more time are never judged worse."""
    quick = judge_rates(before, after, elapsed, LIMITS)
    slow = judge_rates(before, after, elapsed * factor, LIMITS)
    assert {f.evidence for f in slow} <= {f.evidence for f in quick}


@given(counters, counters, st.floats(max_value=0, allow_nan=False))
def test_no_elapsed_time_judges_nothing(before, after, elapsed):
    assert judge_rates(before, after, elapsed, LIMITS) == []

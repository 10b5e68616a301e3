"""The cpu_throttle check's parts: thermal counters, clock samples, stress-ng's metrics."""

from __future__ import annotations

import pytest

from burnin.checks.base import sections
from burnin.parsers import ParseError
from burnin.parsers.cpu_load import parse_clock_samples, parse_stress_ng_brief, parse_throttle_counts
from tests.unit.burnin.parsers._samples import load

THROTTLED = sections(load("cpu_throttle_2x8480c_socket1_throttled_SYNTHETIC.txt"))


def test_counters_by_cpu_and_name() -> None:
    before = parse_throttle_counts(THROTTLED["throttle_before"])
    after = parse_throttle_counts(THROTTLED["throttle_after"])
    assert len(before) == len(after) == 2 * 224
    assert before[(3, "core_throttle_count")] == 2 and before[(56, "package_throttle_count")] == 0
    assert after[(56, "package_throttle_count")] == 3 and after[(60, "core_throttle_count")] == 7


def test_no_counter_files_is_an_empty_reading_not_an_error() -> None:
    assert parse_throttle_counts(sections(load("cpu_throttle_kvm_no_counters.txt"))["throttle_before"]) == {}


@pytest.mark.parametrize(
    "text",
    [
        "cpu0 core 3\n",  # not a counter line
        "/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count:-1\n",
        "/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count:1\n" * 2,  # listed twice
    ],
)
def test_anything_else_among_the_counters_is_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_throttle_counts(text)


def test_clock_samples_in_mhz_and_a_vm_without_cpufreq() -> None:
    samples = parse_clock_samples(THROTTLED["cpu_clocks"])
    assert len(samples) == 23 and all(len(s) == 224 for s in samples)
    assert min(samples[0]) >= 2500 and min(samples[-1]) == 800
    assert parse_clock_samples("khz\nkhz\n") == [[], []]
    with pytest.raises(ParseError):
        parse_clock_samples("khz 2600000 fast\n")


def test_stress_ng_metrics_row_of_a_real_run() -> None:
    run = parse_stress_ng_brief(load("stress_ng_cpu_matrixprod_metrics_brief_kvm_2cpu.txt"))
    assert (run.stressor, run.bogo_ops, run.real_time_s, run.bogo_ops_per_s) == ("cpu", 5108, 5.03, 1015.70)
    assert run.completed and run.exit_status is None and not run.failure


def test_stress_ng_that_failed_has_no_row_and_says_why() -> None:
    run = parse_stress_ng_brief("stress-ng: error: [12] cpu: cannot allocate\nstress-ng exit status 2\n")
    assert run.bogo_ops is None and not run.completed and run.exit_status == 2
    assert run.failure == "cpu: cannot allocate"
    with pytest.raises(ParseError):
        parse_stress_ng_brief("cpu-method must be one of: all ackermann\n")

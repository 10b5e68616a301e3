"""Lemon rules over signals read from a real store, and the policy file's checks."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from bringup.fleet.models import utcnow
from bringup.fleet.store import FleetStore
from burnin.history.lemons import (
    LemonPolicy,
    PolicyError,
    chance_rates,
    find_lemons,
    judge_node,
    parse_policy,
)
from burnin.history.read import read_signals
from burnin.history.signals import ComponentFailure, Failure, NodeSignals, Repair, Source
from tests.unit.burnin.history.writer import PastWriter

NOW = utcnow().replace(microsecond=0)
WINDOW = "28 days"


def day(n: float):
    return NOW - timedelta(days=n)


@pytest.fixture
def past(store_url) -> PastWriter:
    w = PastWriter(FleetStore(store_url))
    for n in range(1, 6):
        w.golden(f"gpu00{n}", "r01", day(90))
    return w


def lemons(past, policy: LemonPolicy | None = None):
    policy = policy or LemonPolicy()
    signals = read_signals(past.store, "r01", timedelta(days=policy.window_days), now=NOW).signals
    return {lemon.node: lemon for lemon in find_lemons(signals, policy, WINDOW)}


def test_the_same_gpu_failing_again_after_a_repair_is_a_lemon(past):
    past.fail("gpu001", day(20), "GPU 5")
    past.repair("gpu001", day(19), "GPU 5 replaced")
    past.fail("gpu001", day(16), "GPU 5", message="GPU 5: fallen off the bus")
    found = lemons(past)
    assert list(found) == ["gpu001"]
    lemon = found["gpu001"]
    assert lemon.rules == ["same part again"]
    # 3 days after its repair; the rack's other nodes never failed: judged by the prior, 6.5 per
    # 1,000 node-days over 1,000 node-days blended with their 112 node-days: 5.85 per 1,000
    assert (
        "GPU 5 failed again after a repair (2 times; 3.0 days after the repair: by chance 1.75% at 5.85 "
        "failures per 1,000 node-days; last: GPU 5: fallen off the bus)"
    ) in lemon.summary
    assert lemon.named_at == day(16) and lemon.first_failure == day(20)
    assert len(lemon.sources) == 2 and all(s.startswith("check_results #") for s in lemon.sources)


def test_one_random_failure_or_two_different_parts_is_not_a_lemon(past):
    past.fail("gpu002", day(20), "GPU 1")
    past.repair("gpu002", day(19), "GPU 1 reseated")
    past.fail("gpu003", day(20), "GPU 1")
    past.repair("gpu003", day(19), "GPU 1 reseated")
    past.fail("gpu003", day(5), "mlx5_0 port 1", stage="ib", check="ib_ports")
    assert lemons(past) == {}


def test_the_same_part_twice_without_a_repair_between_is_one_failure(past):
    past.fail("gpu002", day(20), "GPU 1")
    past.fail("gpu002", day(19), "GPU 1", check="dcgm_diag")  # the same incident seen by two checks
    assert lemons(past) == {}


def test_many_repairs_in_the_window_make_a_lemon(past):
    for i, part in enumerate(["GPU 1", "GPU 2", "mlx5_1 port 1", "DIMM B2"]):
        past.fail("gpu004", day(25 - 6 * i), part)
        past.repair("gpu004", day(24 - 6 * i), f"fixed {part}")
    lemon = lemons(past)["gpu004"]
    assert {"repairs", "failures"} <= set(lemon.rules)
    assert "4 repairs in 28 days" in lemon.summary and "4 failures in 28 days" in lemon.summary


def test_hardware_xids_after_the_last_repair_make_a_lemon_but_application_xids_do_not(past):
    past.fail("gpu004", day(20), "GPU 3")
    past.repair("gpu004", day(19), "GPU 3 replaced")
    past.xids("gpu004", day(25), {79: 9})  # before the repair: not counted
    past.xids("gpu004", day(10), {79: 2, 13: 40})
    past.xids("gpu004", day(5), {79: 1, 43: 12})
    past.fail("gpu005", day(20), "GPU 3")
    past.repair("gpu005", day(19), "GPU 3 replaced")
    past.xids("gpu005", day(10), {13: 50, 43: 50, 31: 3, 45: 7})
    found = lemons(past)
    assert list(found) == ["gpu004"]
    assert "Xid 79 x3 after the last repair" in found["gpu004"].summary


def test_drains_count(past):
    for i in range(4):
        past.drain("gpu005", day(20 - i), f"drained in Slurm by health: gpu_health: GPU {i}")
    assert "4 Slurm drains in 28 days" in lemons(past)["gpu005"].summary


def test_the_window_forgets_old_history(past):
    past.fail("gpu001", day(80), "GPU 5")
    past.repair("gpu001", day(79), "GPU 5 replaced")
    past.fail("gpu001", day(77), "GPU 5")
    assert lemons(past) == {}
    assert list(lemons(past, LemonPolicy(window_days=90))) == ["gpu001"]


def test_the_same_part_rule_can_be_turned_off(past):
    past.fail("gpu001", day(20), "GPU 5")
    past.repair("gpu001", day(19), "GPU 5 replaced")
    past.fail("gpu001", day(12), "GPU 5")
    assert lemons(past, LemonPolicy(same_part_after_repair=False)) == {}


def test_policy_fields_and_defaults():
    assert parse_policy(None, "p.yml") == LemonPolicy()
    p = parse_policy({"max_repairs": 5, "window_days": 14, "application_xids": [13]}, "p.yml")
    assert (p.max_repairs, p.window_days, p.application_xids, p.max_drains) == (5, 14.0, (13,), 4)


@pytest.mark.parametrize(
    "data, words",
    [
        ({"max_repair": 3}, ["p.yml", "unknown field 'max_repair'", "max_repairs"]),
        ({"max_repairs": 0}, ["p.yml", "'max_repairs'", "whole number"]),
        ({"max_repairs": 2.5}, ["'max_repairs'", "whole number"]),
        ({"same_part_after_repair": "yes"}, ["'same_part_after_repair'", "true or false"]),
        ({"window_days": -1}, ["'window_days'", "positive"]),
        ({"same_part_max_chance": 1.5}, ["'same_part_max_chance'", "a chance in (0, 1]"]),
        ({"application_xids": ["x"]}, ["'application_xids'"]),
        (["max_repairs"], ["p.yml", "mapping"]),
    ],
)
def test_a_bad_policy_names_the_file_and_field(data, words):
    with pytest.raises(PolicyError) as err:
        parse_policy(data, "p.yml")
    for w in words:
        assert w in str(err.value)


def test_golden_judge_keeps_a_flagged_lemon_out():
    from burnin.golden.rules import GoldenRules, judge

    rules = GoldenRules(stages=(), max_age=timedelta(days=7))
    assert judge("gpu001", "golden", [], rules, NOW).golden
    flagged = judge(
        "gpu001", "golden", [], rules, NOW, lemon={"evidence": "GPU 5 failed again after a repair"}
    )
    assert not flagged.golden and "flagged a lemon (GPU 5 failed again after a repair)" in flagged.reason


def test_the_same_part_failing_long_after_its_repair_is_chance_not_a_lemon(past):
    past.fail("gpu001", day(27), "GPU 5")
    past.repair("gpu001", day(26), "GPU 5 replaced")
    past.fail("gpu001", day(5), "GPU 5")  # 21 days after the repair
    assert lemons(past) == {}
    assert lemons(past, LemonPolicy(same_part_within_days=21)) == {}  # 12% by chance
    no_bound = LemonPolicy(same_part_within_days=21, same_part_max_chance=1.0)
    assert list(lemons(past, no_bound)) == ["gpu001"]


def test_a_repeat_ten_days_after_its_repair_is_chance_at_the_published_rate(past):
    # The policy's precision at 6.5 failures per 1,000 node-days: a healthy node's GPU re-failing
    # 10 days after its repair (by chance: 10 x 5.85e-3 = 5.9%, over the bound 3.3%) was named
    past.fail("gpu001", day(20), "GPU 5")
    past.repair("gpu001", day(19), "GPU 5 replaced")
    past.fail("gpu001", day(9), "GPU 5")
    assert lemons(past) == {}


def test_two_slower_repeats_of_one_part_together_are_a_lemon(past):
    # each 8 days after its repair (4.7% by chance), both: 0.22%
    past.fail("gpu001", day(26), "GPU 5")
    past.repair("gpu001", day(25), "GPU 5 reseated")
    past.fail("gpu001", day(17), "GPU 5")
    past.repair("gpu001", day(16), "GPU 5 replaced")
    past.fail("gpu001", day(8), "GPU 5", message="GPU 5: Xid 79")
    lemon = lemons(past)["gpu001"]
    assert lemon.rules == ["same part again"] and lemon.named_at == day(8)
    assert (
        "GPU 5 failed again after a repair (3 times; 8.0 days, 8.0 days after the repair: by chance 0.22%"
        in (lemon.summary)
    )


def _healthy_fleet(n: int, failed: int, days: float = 28.0) -> dict[str, NodeSignals]:
    """``n`` nodes in service for ``days``, the first ``failed`` of them with one failure."""
    out = {}
    for i in range(n):
        sig = NodeSignals(f"n{i:04d}", time_in_state={"golden": timedelta(days=days)})
        if i < failed:
            sig.failures = [Failure(day(10), "x", Source("events", i))]
        out[sig.node] = sig
    return out


def test_the_chance_is_judged_by_the_other_nodes_rate_counted_once_per_node():
    policy = LemonPolicy()
    # 2,001 nodes over 28 days, 131 of them failed: -ln(1 - 131/2000) / 28 = 2.41 per 1,000 node-days
    fleet = _healthy_fleet(2001, 131)
    rates = chance_rates(fleet, policy)
    measured = -math.log(1 - 131 / 2000) / 28
    blended = (measured * 2000 * 28 + 6.5e-3 * 1000) / (2000 * 28 + 1000)
    assert rates["n2000"] == pytest.approx(blended) and 2.4e-3 < blended < 2.5e-3
    # a node's own failures never set its bar: n0000 failed; the rate it is judged by is the others'
    assert rates["n0000"] == pytest.approx(
        (-math.log(1 - 130 / 2000) / 28 * 2000 * 28 + 6.5) / (2000 * 28 + 1000)
    )
    # many failures on one node (a lemon) raise the measured rate no more than one
    fleet["n0001"].failures = fleet["n0001"].failures * 9
    assert chance_rates(fleet, policy)["n2000"] == pytest.approx(blended)
    # a rack with no node-days to speak of (the lab's, minutes old) is judged by the prior, nearly
    small = chance_rates(_healthy_fleet(4, 2, days=0.01), policy)["n0003"]
    assert small == pytest.approx((-math.log(1 - 2 / 3) * 3 + 6.5) / (1000 + 0.03)) and small < 0.01


def _repeat_at(gap_days: float) -> NodeSignals:
    sig = NodeSignals("gpu001", time_in_state={"golden": timedelta(days=28)})
    first, fixed = day(20), day(19)
    sig.components = [
        ComponentFailure(t, "gpu", "gpu_health", "gpu", "GPU 5", "GPU 5: ECC", Source("check_results", i))
        for i, t in enumerate((first, fixed + timedelta(days=gap_days)))
    ]
    sig.failures = [Failure(c.time, "x", Source("events", 1)) for c in sig.components]
    sig.repairs = [Repair(fixed, "GPU 5 replaced", Source("events", 2))]
    return sig


@pytest.mark.parametrize(
    "rate, gap, lemon",
    [(2.34e-3, 13.0, True), (2.34e-3, 15.0, False), (6.5e-3, 5.0, True), (6.5e-3, 5.2, False)],
)
def test_one_repeat_counts_within_the_days_the_fleets_rate_allows(rate, gap, lemon):
    # 0.033 / rate: 14.1 days at 2.34 per 1,000 node-days (capped at same_part_within_days, 14),
    # 5.1 days at 6.5; whatever the node's own rate (its two failures in 28 days are not in it)
    found = judge_node(_repeat_at(gap), LemonPolicy(), WINDOW, rate=rate)
    assert (found is not None) == lemon


def test_a_repeat_seconds_after_its_repair_says_so():
    # the lab's lemon fails again within the minute of its repair
    found = judge_node(_repeat_at(20 / 86400), LemonPolicy(), WINDOW, rate=6.5e-3)
    assert found is not None and "(2 times; 20 s after the repair: by chance < 0.01% at 6.50" in found.summary

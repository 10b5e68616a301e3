"""Lemon rules over signals read from a real store, and the policy file's checks."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bringup.fleet.models import utcnow
from bringup.fleet.store import FleetStore
from burnin.history.lemons import LemonPolicy, PolicyError, find_lemons, parse_policy
from burnin.history.read import read_signals
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
    past.fail("gpu001", day(12), "GPU 5", message="GPU 5: fallen off the bus")
    found = lemons(past)
    assert list(found) == ["gpu001"]
    lemon = found["gpu001"]
    assert lemon.rules == ["same part again"]
    assert "GPU 5 failed again after a repair (2 times; last: GPU 5: fallen off the bus)" in lemon.summary
    assert lemon.named_at == day(12) and lemon.first_failure == day(20)
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
    past.fail("gpu001", day(70), "GPU 5")
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
    from burnin.golden import GoldenRules, judge

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
    assert list(lemons(past, LemonPolicy(same_part_within_days=21))) == ["gpu001"]

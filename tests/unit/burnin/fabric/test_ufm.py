"""UFM's event log turned into port actions: a flapping port leads to a disable proposal and a
ticket naming both ends by the plan; re-enabling is offered only once the ib stage has loaded
the port clean after its last bad event. Read from the recorded logs in the corpus (DERIVED from
UFM's documentation: tests/fixtures/samples/index.tsv)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from burnin.fabric.plan import parse_plan_yaml
from burnin.fabric.ufm import (
    FLAPPING,
    HIGH_BER,
    LINK_DOWN,
    THERMAL,
    CleanLoad,
    UfmError,
    clean_loads,
    judge_events,
    kind_of,
    parse_ufm_events,
)
from tests.unit.burnin.parsers._samples import load

PLAN = """
switches:
  su1-leaf0: {guid: "0x0002c903000a0001", rack: R01, unit: U40}
  su1-leaf1: {guid: "0x0002c903000a0002", rack: R01, unit: U41}
  su2-leaf0: {guid: "0x0002c903000a0003", rack: R02, unit: U40}
  su2-leaf1: {guid: "0x0002c903000a0004", rack: R02, unit: U41}
  spine1: {guid: "0x0002c903000b0001", rack: R09, unit: U20}
  spine2: {guid: "0x0002c903000b0002", rack: R09, unit: U21}
fat_tree: {scalable_units: 2, nodes_per_unit: 4, rails: 2, spines: 2}
"""
REST = "ufm_events_rest_flapping_port_DERIVED.json"
LOG = "ufm_event_log_flapping_port_DERIVED.txt"
FLAPPER = "gpu0001 mlx5_0 port 1 <-> switch su1-leaf0 (rack R01 U40) port 1"


def plan():
    return parse_plan_yaml(PLAN, "plan.yml")


def events(name: str, **kw):
    p = plan()
    return parse_ufm_events(load(name), name, p.switch_by_guid(), **kw)


def case_of(report, ends: str):
    return next(c for c in report.cases if c.ends == ends)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_the_rest_answer_is_read_with_ports_named_by_the_plan():
    read = events(REST)
    assert len(read) == 12 and read[0].at == at("2024-05-28 08:03:05")
    down = next(e for e in read if e.code == 329)
    assert down.name == "Link went down" and kind_of(down) == LINK_DOWN
    assert [(r.device, r.hca, r.port) for r in down.ports] == [
        ("su1-leaf0", None, "1"),
        ("gpu0001", "mlx5_0", "1"),
    ]
    assert [kind_of(e) for e in read[:2]] == [None, None]  # multicast groups: not judged


def test_a_flapping_port_is_disabled_and_ticketed_naming_both_ends():
    report = judge_events(events(REST), plan())
    flap = report.cases[0]
    assert (flap.kind(), flap.ends, flap.link_downs) == (FLAPPING, FLAPPER, 4)
    assert [(p.action, p.target) for p in flap.proposals] == [
        ("disable", "switch su1-leaf0 (rack R01 U40) port 1"),
        ("ticket", f"cable or transceiver {FLAPPER}"),
    ]
    assert "once the ib stage loads gpu0001 mlx5_0 port 1 clean" in flap.waiting
    assert flap.line().startswith(f"flapping: {FLAPPER}, 4 event(s), last 2024-05-28 08:19:45Z -> DISABLE")
    assert (report.events, report.ignored, report.unplaced) == (12, 6, 0)  # 2 multicast, 4 link up


def test_ber_and_thermal_events_are_their_own_cases():
    report = judge_events(events(REST), plan())
    ber = case_of(report, "gpu0002 mlx5_1 port 1 <-> switch su1-leaf1 (rack R01 U41) port 2")
    assert ber.kind() == HIGH_BER and [p.action for p in ber.proposals] == ["disable", "ticket"]
    heat = case_of(report, "switch su1-leaf0 (rack R01 U40) port 5 <-> switch spine1 (rack R09 U20) port 1")
    assert heat.kind() == THERMAL and heat.proposals[1].target.startswith("transceiver switch su1-leaf0")
    assert heat.waiting == "re-enable by hand after repair: the ib stage loads HCA ports only"


def test_the_event_log_text_is_read_the_same_way_and_the_sms_flapping_verdict_counts():
    report = judge_events(events(LOG), plan())
    flap = case_of(report, FLAPPER)
    assert flap.kind() == FLAPPING and flap.link_downs == 3 and len(flap.events) == 4
    ber = case_of(report, "gpu0007 mlx5_0 port 1 <-> switch su2-leaf0 (rack R02 U40) port 3")
    assert ber.kind() == HIGH_BER and ber.events[0].code == 110
    # The SM's FLAPPING verdict alone makes a flap, even under the count.
    only_sm = [e for e in events(LOG) if e.code == 702]
    assert judge_events(only_sm, plan()).cases[0].kind() == FLAPPING


def test_downs_spread_wider_than_the_window_are_link_downs_not_a_flap():
    read = events(REST)
    report = judge_events(read, plan(), window_s=60)
    flap = case_of(report, FLAPPER)
    assert flap.kind() == LINK_DOWN and [p.action for p in flap.proposals] == ["ticket"]
    assert judge_events(read, plan(), flaps=5).cases[-1].kind() == LINK_DOWN


def test_re_enabling_waits_for_a_clean_ib_load_after_the_last_event():
    read, p = events(REST), plan()
    last = at("2024-05-28 08:19:45")
    not_yet = [
        CleanLoad("gpu0001", "mlx5_0", 1, at("2024-05-28 08:00:00")),  # clean, but before the flaps
        CleanLoad("gpu0001", "mlx5_1", 1, at("2024-05-29 10:00:00")),  # clean, another rail
        CleanLoad("gpu0002", "mlx5_0", 1, at("2024-05-29 10:00:00")),  # clean, another node
    ]
    before = case_of(judge_events(read, p, not_yet), FLAPPER)
    assert [x.action for x in before.proposals] == ["disable", "ticket"] and before.repaired_by is None
    repaired = CleanLoad("gpu0001", "mlx5_0", 1, at("2024-05-29 10:00:00"))
    after = case_of(judge_events(read, p, [*not_yet, repaired]), FLAPPER)
    assert after.repaired_by == repaired and after.waiting == ""
    assert [(x.action, x.target) for x in after.proposals] == [
        ("re-enable", "switch su1-leaf0 (rack R01 U40) port 1")
    ]
    assert "loaded gpu0001 mlx5_0 port 1 clean at 2024-05-29 10:00:00Z" in after.proposals[0].why
    assert after.last == last


def test_only_passed_ports_of_ib_bandwidth_results_are_clean_loads():
    rows = [
        {
            "node": "gpu0001",
            "check": "ib_bandwidth",
            "time": "2024-05-29T10:00:00Z",
            "metrics": {
                "ports": {
                    "mlx5_0": {"verdict": "PASS"},
                    "mlx5_1": {"verdict": "FAIL"},
                    "mlx5_2/2": {"verdict": "PASS"},
                }
            },
        },
        {
            "node": "gpu0001",
            "check": "ib_ports",
            "time": "2024-05-29T10:00:00Z",
            "metrics": {"ports": {"mlx5_3": {"verdict": "PASS"}}},
        },
    ]
    assert clean_loads(rows) == [
        CleanLoad("gpu0001", "mlx5_0", 1, at("2024-05-29 10:00:00")),
        CleanLoad("gpu0001", "mlx5_2", 2, at("2024-05-29 10:00:00")),
    ]


def test_a_failed_load_after_the_repair_does_not_re_enable():
    rows = [
        {
            "node": "gpu0001",
            "check": "ib_bandwidth",
            "time": "2024-05-29T10:00:00Z",
            "metrics": {"ports": {"mlx5_0": {"verdict": "FAIL"}}},
        }
    ]
    case = case_of(judge_events(events(REST), plan(), clean_loads(rows)), FLAPPER)
    assert [x.action for x in case.proposals] == ["disable", "ticket"]


def test_without_a_plan_the_ports_are_named_as_ufm_names_them():
    read = parse_ufm_events(load(REST), REST)
    flap = judge_events(read).cases[0]
    assert flap.kind() == FLAPPING
    assert flap.ends == "switch su1-leaf0 port 1 <-> gpu0001 mlx5_0 port 1 (seen, not in the plan)"
    assert flap.switch_port == "switch su1-leaf0 port 1"
    assert "once the ib stage loads gpu0001 mlx5_0 port 1 clean" in flap.waiting  # the HCA end UFM names
    repaired = CleanLoad("gpu0001", "mlx5_0", 1, at("2024-05-29 10:00:00"))
    assert [x.action for x in judge_events(read, loads=[repaired]).cases[0].proposals] == ["re-enable"]


def test_timestamps_are_read_in_the_zone_given():
    read = events(LOG, zone=ZoneInfo("America/Los_Angeles"))
    assert read[1].at == at("2024-06-20 14:46:24.442")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"name": "x"}]', "entry 1: not a UFM event"),
        ('[{"name": "x", "timestamp": "yesterday"}]', "timestamp 'yesterday' is not a date"),
        ("[not json", "not UFM's events JSON"),
        ("2024-06-20 07:46:24 something else\n", "line 1: not a UFM event log line"),
        ("", "empty"),
    ],
)
def test_an_unreadable_log_is_refused_naming_the_entry(text, message):
    with pytest.raises(UfmError, match=message):
        parse_ufm_events(text, "events.json")

"""Both ends of a loaded cable (burnin.checks.ib_link_ends): the HCA port's and the far switch
port's error counters before and after the load, and which physical end they blame."""

from __future__ import annotations

from burnin.checks.ib_link_ends import far_end, judge_link_ends, switch_rises
from burnin.checks.ib_load import CounterChange, IbPortInfo, counter_changes
from burnin.fabric.plan import End, Plan, PlannedLink, Switch
from burnin.parsers.perfquery import parse_perfquery
from burnin.result import Action, Severity
from tests.unit.burnin.parsers._samples import load

PORT = IbPortInfo(
    "gpu0001",
    "mlx5_0",
    1,
    "0x7cfe9003003b4bde",
    134,
    400.0,
    "InfiniBand",
    "Active",
    "LinkUp",
    "switch ib-i4l1s01 (0x506b4b03005c2740) port 1",
    switch_lid=2052,
    switch_port_number=1,
    switch_guid="0x506b4b03005c2740",
    switch_name="ib-i4l1s01",
)
SECONDS = 60.0


def _switch_counters() -> dict[str, int]:
    # A real switch port's 'perfquery -x 2052 1' (EDR; LinkDownedCounter 1, PortXmitDiscards 20046).
    (block,) = parse_perfquery(load("perfquery_x_errors_switch.txt"))
    assert block.lid == 2052 and block.port == 1
    return dict(block.counters)


def _rounds(before: dict[str, int], **rise: int) -> list[list[CounterChange]]:
    after = dict(before)
    for name, n in rise.items():
        after[name] = after.get(name, 0) + n
    return [counter_changes(before, after)]


CLEAN_HCA = dict.fromkeys(("SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors", "PortXmitDiscards"), 0)


def test_healthy_link_gives_no_finding() -> None:
    switch = _switch_counters()  # its old non-zero counters do not rise: nothing to say
    findings = judge_link_ends(PORT, far_end(PORT), _rounds(CLEAN_HCA), _rounds(switch), SECONDS)
    assert findings == []


def test_both_ends_rising_blames_the_cable_naming_both_ends() -> None:
    hca = _rounds(CLEAN_HCA, SymbolErrorCounter=720)
    switch = _rounds(_switch_counters(), SymbolErrorCounter=1440)
    (finding,) = judge_link_ends(PORT, far_end(PORT), hca, switch, SECONDS)
    assert finding.severity is Severity.CRITICAL and finding.action is Action.REPLACE_CABLE
    assert "cable" in finding.message
    assert "gpu0001 mlx5_0 port 1" in finding.message
    assert (
        "switch ib-i4l1s01" in finding.message
        and "LID 2052" in finding.message
        and "port 1" in finding.message
    )
    assert "12.0/s" in finding.message and "24.0/s" in finding.message  # rates under load
    assert "SymbolErrorCounter: 0 -> 720" in finding.evidence


def test_only_the_switch_end_rising_names_the_switch_port() -> None:
    switch = _rounds(_switch_counters(), SymbolErrorCounter=600)
    (finding,) = judge_link_ends(PORT, far_end(PORT), _rounds(CLEAN_HCA), switch, SECONDS)
    assert finding.severity is Severity.CRITICAL and finding.action is Action.RESEAT
    assert finding.message.startswith("switch ib-i4l1s01 (GUID 0x506b4b03005c2740, LID 2052) port 1")
    assert "the HCA end saw none" in finding.message and not finding.message.startswith("the cable")
    assert "10.0/s" in finding.message


def test_only_the_hca_end_rising_names_the_hca_port() -> None:
    hca = _rounds(CLEAN_HCA, PortRcvErrors=30)
    (finding,) = judge_link_ends(PORT, far_end(PORT), hca, _rounds(_switch_counters()), SECONDS)
    assert finding.action is Action.RESEAT and finding.message.startswith("gpu0001 mlx5_0 port 1")
    assert "transceiver" in finding.message and "the switch end saw none" in finding.message


def test_link_downed_at_both_ends_is_the_cable() -> None:
    hca = _rounds(CLEAN_HCA, LinkDownedCounter=1)
    switch = _rounds(_switch_counters(), LinkDownedCounter=1)  # 1 -> 2 on the real port
    (finding,) = judge_link_ends(PORT, far_end(PORT), hca, switch, SECONDS)
    assert finding.action is Action.REPLACE_CABLE and "LinkDownedCounter" in finding.message


def test_transmit_discards_warn_naming_the_end() -> None:
    switch = _rounds(_switch_counters(), PortXmitDiscards=500)
    (finding,) = judge_link_ends(PORT, far_end(PORT), _rounds(CLEAN_HCA), switch, SECONDS)
    assert finding.severity is Severity.WARNING and finding.action is Action.MONITOR
    assert "PortXmitDiscards" in finding.message and "switch ib-i4l1s01" in finding.message


def test_a_saturated_switch_counter_warns_it_cannot_be_judged() -> None:
    before = dict(_switch_counters(), SymbolErrorCounter=0xFFFF)
    (finding,) = judge_link_ends(PORT, far_end(PORT), _rounds(CLEAN_HCA), _rounds(before), SECONDS)
    assert finding.severity is Severity.WARNING and "perfquery -R" in finding.message


def test_the_plan_names_the_switch_by_its_place() -> None:
    plan = Plan(
        "plan.yml",
        [PlannedLink(End("gpu0001", "mlx5_0", 1), End("su1-leaf0", None, 1))],
        {"su1-leaf0": Switch("su1-leaf0", 0x506B4B03005C2740, "R01", "U40")},
    )
    end = far_end(PORT, plan)
    assert end is not None and end.describe() == "switch su1-leaf0 (rack R01 U40) port 1"
    switch = _rounds(_switch_counters(), SymbolErrorCounter=60)
    (finding,) = judge_link_ends(PORT, end, _rounds(CLEAN_HCA), switch, SECONDS)
    assert finding.message.startswith("switch su1-leaf0 (rack R01 U40) port 1")


def test_no_far_end_without_a_switch_lid() -> None:
    from dataclasses import replace

    assert far_end(replace(PORT, switch_lid=None)) is None


def test_switch_rises_tell_a_bad_link() -> None:
    assert switch_rises(_rounds(_switch_counters(), SymbolErrorCounter=5)) == {"SymbolErrorCounter": 5}
    assert switch_rises(_rounds(_switch_counters())) == {}

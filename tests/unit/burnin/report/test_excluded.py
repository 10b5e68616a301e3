"""The excluded nodes grouped by the gist of their reasons (pure: no browser here;
test_html_fleet.py renders the groups in Chromium)."""

from __future__ import annotations

from burnin.report import NodeReport
from burnin.report.excluded import gist, group_excluded, headline


def node(name: str, *reasons: str, state: str = "burnin", golden: bool = False) -> NodeReport:
    return NodeReport(name, state, "h100", None, golden, reasons, {}, ())


NEVER = ("stage ib never ran", "stage nccl never ran")


def test_the_gist_drops_what_differs_between_nodes():
    assert (
        gist("stage gpu FAIL (run 12): gpu_stress: GPU 3 in HW slowdown -> RESEAT")
        == "stage gpu FAIL: gpu_stress"
    )
    assert gist("stage ib UNKNOWN (run 4): ib_bandwidth: timed out") == "stage ib UNKNOWN: ib_bandwidth"
    assert gist("state failed (burn-in stage gpu failed: GPU 5 throttled)") == "state failed"
    assert gist("results older than 7 d (latest gpu result 2026-01-02)") == "results older than 7 d"
    assert gist("in burn-in now: run 5 (burnin, started 10:00)") == "in burn-in now"
    assert gist("stage ib never ran") == "stage ib never ran"


def test_the_headline_names_the_stages_that_never_ran_once():
    assert headline(NEVER) == "stages ib and nccl never ran"
    assert headline(("stage gpu FAIL: gpu_stress", "stage pcie never ran", *NEVER)) == (
        "stage gpu FAIL: gpu_stress; stages pcie, ib and nccl never ran"
    )
    assert headline(("stage nccl never ran",)) == "stage nccl never ran"


def test_32_nodes_with_the_same_reasons_are_one_group():
    nodes = [node(f"n{i:02d}", *NEVER) for i in range(32)]
    (group,) = group_excluded(nodes)
    assert len(group.nodes) == 32 and group.headline == "stages ib and nccl never ran" and group.same_detail


def test_groups_come_worst_first_then_biggest_and_golden_nodes_are_left_out():
    nodes = [
        *(node(f"never{i}", *NEVER) for i in range(5)),
        node("unknown1", "stage ib UNKNOWN (run 3): ib_bandwidth: timed out", "stage nccl never ran"),
        node("gpu1", "stage gpu FAIL (run 3): gpu_stress: GPU 1 HW slowdown -> RESEAT", *NEVER),
        node("gpu2", "stage gpu FAIL (run 4): gpu_stress: GPU 6 HW slowdown -> RESEAT", *NEVER),
        node("fine", golden=True),
    ]
    groups = group_excluded(nodes)
    assert [g.headline for g in groups] == [
        "stage gpu FAIL: gpu_stress; stages ib and nccl never ran",
        "stage ib UNKNOWN: ib_bandwidth; stage nccl never ran",
        "stages ib and nccl never ran",
    ]
    assert [len(g.nodes) for g in groups] == [2, 1, 5]
    assert not groups[0].same_detail  # which GPU differs: each node is listed with its reasons

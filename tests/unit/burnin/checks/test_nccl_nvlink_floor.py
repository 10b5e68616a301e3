"""The floor of a multi-node NVLink all-reduce inside one NVLink domain (busbw_floor with
``nvlink_domain``): the profile's ``floors.nccl_busbw_nvlink_domain_gbps`` for a group as large as
its figure covers, the multi-node (InfiniBand) floor otherwise; and the real 16-tray GB300 rack's
all-reduce judged against it."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.nccl import busbw_floor, judge_output, nvlink_domain_floor
from burnin.result import Verdict
from tests.paths import REPO
from tests.unit.burnin.parsers._samples import load

PROFILES = REPO / "inventories" / "profiles"
GB300, _ = load_profile("gb300-nvl72-tray", PROFILES)
GB200, _ = load_profile("gb200-nvl72-tray", PROFILES)
GB300_RACK = load("nccl_tests_all_reduce_perf_64xgb300_16_trays_nvl72_PARTIAL.txt")


def test_the_nvlink_floor_applies_to_a_domain_group_of_the_trays_it_covers():
    assert (
        busbw_floor(GB300, 16, nvlink_domain=True) == 823 and busbw_floor(GB300, 3, nvlink_domain=True) == 823
    )
    assert (
        busbw_floor(GB300, 2, nvlink_domain=True) == 356
    )  # under the 3 trays NVIDIA's figure was measured on
    assert busbw_floor(GB300, 16) == 356 and busbw_floor(GB300, 1, nvlink_domain=True) == 432
    assert nvlink_domain_floor(GB300, 18) == 823 and nvlink_domain_floor(GB300, 2) is None


def test_without_an_nvlink_floor_the_domain_is_held_to_the_multi_node_floor():
    assert GB200.floors.nccl_busbw_nvlink_domain_gbps is None
    assert busbw_floor(GB200, 18, nvlink_domain=True) == 180 and nvlink_domain_floor(GB200, 18) is None


def test_the_nvlink_floor_is_overridable():
    lab = apply_overrides(GB300, ("floors.nccl_busbw_nvlink_domain_gbps=0.04",))
    assert busbw_floor(lab, 3, nvlink_domain=True) == 0.04
    two = apply_overrides(GB300, ("floors.nccl_busbw_nvlink_domain_min_nodes=2",))
    assert busbw_floor(two, 2, nvlink_domain=True) == 823


def test_the_real_16_tray_gb300_rack_passes_its_nvlink_floor():
    """oracle-quickstart's GB300 rack: 64 GPUs of 16 trays over multi-node NVLink, 897-931 GB/s."""
    result = judge_output(GB300_RACK, busbw_floor(GB300, 16, nvlink_domain=True))
    assert result.verdict is Verdict.PASS
    assert result.metrics["floor_gbps"] == 823 and 897 < result.metrics["busbw_gbps"] < 931


def test_a_rack_at_500_fails_the_nvlink_floor_and_passes_the_infiniband_one():
    slow = GB300_RACK
    for real, degraded in (
        ("897.52", "497.52"),
        ("900.01", "500.01"),
        ("930.48", "530.48"),
        ("930.60", "530.60"),
    ):
        slow = slow.replace(real, degraded)
    assert judge_output(slow, busbw_floor(GB300, 16)).verdict is Verdict.PASS
    failed = judge_output(slow, busbw_floor(GB300, 16, nvlink_domain=True))
    assert failed.verdict is Verdict.FAIL
    assert any("below the floor 823 GB/s" in f.message for f in failed.findings)

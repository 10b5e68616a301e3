"""The NVLink-domain floor of an NVL72 profile: optional, positive, set on GB300 with the tray
count its figure covers, unset on GB200 (no public figure found), overridable like every floor."""

from __future__ import annotations

import pytest

from bringup.core.errors import BadInput
from bringup.profiles.load import apply_overrides, load_profile
from tests.paths import REPO

PROFILES = REPO / "inventories" / "profiles"


def test_gb300_sets_nvidias_gate_and_the_trays_it_covers():
    gb300, problems = load_profile("gb300-nvl72-tray", PROFILES)
    assert not problems
    assert gb300.floors.nccl_busbw_nvlink_domain_gbps == 823
    assert gb300.floors.nccl_busbw_nvlink_domain_min_nodes == 3


def test_unset_elsewhere():
    for name in ("gb200-nvl72-tray", "h100-sxm-8x400g"):
        profile, _ = load_profile(name, PROFILES)
        assert profile.floors.nccl_busbw_nvlink_domain_gbps is None
        assert profile.floors.nccl_busbw_nvlink_domain_min_nodes == 2


@pytest.mark.parametrize(
    "item",
    [
        "floors.nccl_busbw_nvlink_domain_gbps=0",
        "floors.nccl_busbw_nvlink_domain_gbps=-1",
        "floors.nccl_busbw_nvlink_domain_gbps=true",
        "floors.nccl_busbw_nvlink_domain_min_nodes=1",
        "floors.nccl_busbw_nvlink_domain_min_nodes=2.5",
    ],
)
def test_bad_values_are_refused(item):
    gb300, _ = load_profile("gb300-nvl72-tray", PROFILES)
    with pytest.raises(BadInput):
        apply_overrides(gb300, (item,))


def test_overrides_set_and_unset_it():
    gb300, _ = load_profile("gb300-nvl72-tray", PROFILES)
    assert (
        apply_overrides(
            gb300, ("floors.nccl_busbw_nvlink_domain_gbps=0.04",)
        ).floors.nccl_busbw_nvlink_domain_gbps
        == 0.04
    )
    assert (
        apply_overrides(
            gb300, ("floors.nccl_busbw_nvlink_domain_gbps=null",)
        ).floors.nccl_busbw_nvlink_domain_gbps
        is None
    )

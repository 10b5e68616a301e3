"""bringup/profiles/suggest.py: the BMC's GPU list suggests a shipped profile, and a node whose
profile is for other hardware is named with both.

The GPU lists come from discovery run on BMC trees captured from real machines
(tests/fixtures/redfish/, each with its SOURCE.md); the profiles are the shipped ones
(inventories/profiles). Each expected model below was read from the tree's JSON.
"""

from __future__ import annotations

import pytest

from bringup.profiles.suggest import is_model, listed_gpus, mismatch, model_words, shipped_profiles, suggest
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from tests.doubles.redfish_server import FakeBmc, serving
from tests.paths import REPO

PASSWORD = "captured-pw"
PROFILES = shipped_profiles(REPO / "inventories" / "profiles")


def hardware_of(tree: str, system: str | None = None) -> dict:
    fake = FakeBmc.from_fixture(tree, password=PASSWORD)
    with serving(fake):
        found = discover_endpoint(
            BmcEndpoint("node", fake.url, "root", PASSWORD, system=system), TransportOptions(retries=0)
        )
    return found.hardware


def gpus(model: str | None, n: int, system_model: str | None = None) -> dict:
    return {
        "gpus": [{"slot": f"GPU{i}", "model": model} for i in range(n)],
        "system": {"model": system_model},
    }


def test_the_shipped_profiles_are_all_read():
    assert {
        "a100-sxm-8x200g",
        "h100-sxm-8x400g",
        "h200-sxm-8x400g",
        "b200-sxm-8x400g",
        "gb200-nvl72-tray",
        "b300-sxm-8x800g",
        "gb300-nvl72-tray",
    } <= set(PROFILES)


def test_names_compare_across_spaces_underscores_and_hyphens_as_whole_words():
    assert (
        model_words("NVIDIA_A100-SXM4-40GB")
        == model_words("NVIDIA A100-SXM4-40GB")
        == "nvidia a100 sxm4 40gb"
    )
    assert is_model("NVIDIA_A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB")
    assert not is_model("NVIDIA GB200", "NVIDIA B200")  # a B200 profile does not fit a GB200 tray
    assert not is_model("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB")
    assert not is_model("NVIDIA H100 80GB HBM3", "")


def test_a_dell_xe9680_with_eight_h100s_suggests_the_h100_profile():
    """iDRAC 9 lists eight Processors of type GPU, Model "NVIDIA H100 80GB HBM3"."""
    found = suggest(hardware_of("dell-idrac9-gpus"), PROFILES)
    assert found.profiles == ("h100-sxm-8x400g",) and found.compared
    assert found.why == "PowerEdge XE9680: 8 x NVIDIA H100 80GB HBM3 -> h100-sxm-8x400g"


def test_a_supermicro_gb300_tray_suggests_the_gb300_profile():
    """The tray's HGX baseboard lists four Processors of Model "NVIDIA GB300" (GB NVL)."""
    found = suggest(hardware_of("supermicro-gb300"), PROFILES)
    assert found.profiles == ("gb300-nvl72-tray",) and found.compared
    assert found.why == "GB NVL: 4 x NVIDIA GB300 -> gb300-nvl72-tray"
    # Neither the GB200 tray nor the HGX B300 profile takes a GB300 ("B300" is not "GB300").
    assert not is_model("NVIDIA GB300", "NVIDIA B300 SXM6 AC")
    assert not is_model("NVIDIA GB300", "NVIDIA GB200")


@pytest.mark.parametrize(
    ("tree", "system", "seen", "nearest"),
    [
        # iLO 5's Devices name the GPU "NVIDIA A100-SXM4-40GB"; the shipped A100 profile is 80 GB.
        ("hpe-xl675d-a100", None, "ProLiant XL675d Gen10 Plus: 8 x NVIDIA A100-SXM4-40GB", "a100-sxm-8x200g"),
        # The Cray EX235n blade writes NVIDIA_A100-SXM4-40GB in Processors; four per node.
        ("hpe-cray-ex235n", "Node0", "HPE Cray EX235n: 4 x NVIDIA_A100-SXM4-40GB", "a100-sxm-8x200g"),
        ("hpe-xl675d-a40", None, "ProLiant XL675d Gen10 Plus: 8 x NVIDIA A40", None),
        ("hpe-cray-ex235a", None, "HPE CRAY EX235a: 8 x AMD INSTINCT MI200 (MCM) OAM LC", None),
    ],
)
def test_captured_gpus_no_profile_fits_say_none_and_why(tree, system, seen, nearest):
    found = suggest(hardware_of(tree, system), PROFILES)
    assert found.profiles == () and found.compared
    assert found.why.startswith(f"{seen} -> no profile: none names this GPU")
    if nearest:
        assert f"nearest: {nearest} (8 x NVIDIA A100-SXM4-80GB)" in found.why
    else:
        assert "nearest" not in found.why


def test_a_bmc_without_a_gpu_list_suggests_nothing_and_says_why():
    """iDRAC 9 on an XE9680 without a Processors collection: discovery records it unavailable."""
    found = suggest(hardware_of("dell-idrac9"), PROFILES)
    assert (found.profiles, found.compared) == ((), False)
    assert found.why.startswith("the BMC lists no GPU (not supported by this BMC")
    assert suggest({}, PROFILES).why.startswith("no GPU list from the BMC")


def test_each_shipped_profile_is_suggested_by_its_own_gpus():
    for name, p in PROFILES.items():
        assert suggest(gpus(p.gpu.model, p.gpu.count), PROFILES).profiles == (name,)


def test_the_right_model_in_another_count_or_a_mixed_list_suggests_none():
    found = suggest(gpus("NVIDIA GB200", 8), PROFILES)
    assert (
        found.profiles == ()
        and found.why == "8 x NVIDIA GB200 -> no profile: none has 8 of them (gb200-nvl72-tray has 4)"
    )
    mixed = {"gpus": [{"model": "NVIDIA H100 80GB HBM3"}] * 7 + [{"model": "NVIDIA H200"}]}
    assert suggest(mixed, PROFILES).why == (
        "7 x NVIDIA H100 80GB HBM3 + 1 x NVIDIA H200 -> no profile: the BMC lists more than one model"
    )
    assert listed_gpus(mixed).count == 8


def test_a_node_whose_bmc_lists_other_gpus_than_its_profile_is_named_with_both():
    hw = hardware_of("hpe-xl675d-a100")
    why = mismatch("gpu07", hw, "h100-sxm-8x400g", PROFILES["h100-sxm-8x400g"], PROFILES)
    assert why is not None
    assert why.startswith(
        "node gpu07: the BMC lists 8 x NVIDIA A100-SXM4-40GB; its profile h100-sxm-8x400g expects "
        "8 x NVIDIA H100 80GB HBM3"
    )
    assert "set the host's profile in the inventory" in why


def test_the_mismatch_names_the_profile_the_gpus_fit_when_one_does():
    why = mismatch("gpu07", gpus("NVIDIA H200", 8), "h100-sxm-8x400g", PROFILES["h100-sxm-8x400g"], PROFILES)
    assert why is not None and "(the BMC's GPUs fit h200-sxm-8x400g)" in why


def test_a_fitting_profile_a_missing_gpu_and_no_gpu_list_are_not_mismatches():
    h100 = PROFILES["h100-sxm-8x400g"]
    assert mismatch("n", hardware_of("dell-idrac9-gpus"), "h100-sxm-8x400g", h100) is None
    # Seven of the eight: a fault burn-in judges by slot, not a wrong profile.
    assert mismatch("n", gpus("NVIDIA H100 80GB HBM3", 7), "h100-sxm-8x400g", h100) is None
    assert mismatch("n", hardware_of("dell-idrac9"), "h100-sxm-8x400g", h100) is None
    assert mismatch("n", {}, "h100-sxm-8x400g", h100) is None
    assert mismatch("n", gpus(None, 8), "h100-sxm-8x400g", h100) is None  # no model to compare

"""A profile runs its own GPU vendor's checks (burnin/checks/vendor.py), in every stage and in
`burnin health`."""

from __future__ import annotations

from bringup.profiles.load import load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.vendor import check_vendor, fits_vendor
from burnin.service.health import health_checks
from burnin.stages import ALL_STAGES, is_group_stage, stage_checks
from burnin.stages.group import applies
from tests.profiles import SHIPPED_DIR, shipped


def _mi300x():
    profile, problems = load_profile("mi300x-8x400g", SHIPPED_DIR)
    assert profile is not None, problems
    return profile


def _run(profile) -> set[str]:
    names = {c.name for s in ALL_STAGES if not is_group_stage(s) for c in stage_checks(s, profile)}
    return names | {c.name for c in health_checks(profile, container=True)}


def test_the_vendor_follows_from_what_a_check_reads() -> None:
    assert check_vendor(ALL_CHECKS["gpu_inventory"]) == "nvidia"
    assert check_vendor(ALL_CHECKS["dcgm_diag"]) == "nvidia"
    assert check_vendor(ALL_CHECKS["amd_gpu_ecc"]) == "amd"
    assert check_vendor(ALL_CHECKS["kernel_log"]) is None


def test_an_amd_profile_runs_no_nvidia_check_and_an_nvidia_one_no_amd_check() -> None:
    on_amd = _run(_mi300x())
    assert {"amd_gpu_inventory", "amd_gpu_ecc", "kernel_log"} <= on_amd
    assert not [n for n in on_amd if check_vendor(ALL_CHECKS[n]) == "nvidia"]
    on_nvidia = _run(shipped())
    assert "gpu_inventory" in on_nvidia
    assert not [n for n in on_nvidia if check_vendor(ALL_CHECKS[n]) == "amd"]


def test_the_nccl_stage_applies_to_both_vendors() -> None:
    # rccl-tests is nccl-tests' AMD port: the same programs and output (burnin/stages/nccl.py)
    assert applies("nccl", shipped()) and applies("nccl", _mi300x())
    assert check_vendor(ALL_CHECKS["nccl_local"], _mi300x()) is None  # no nvidia-smi without NVLinks
    assert applies("ib", _mi300x())  # the ib stage is unchanged


def test_the_pcie_stage_runs_pcie_links_on_both_vendors() -> None:
    # sysfs is every vendor's; the load is burnin-stress (torch.cuda is HIP on ROCm builds)
    assert "pcie_links" in {c.name for c in stage_checks("pcie", _mi300x())}
    assert "pcie_links" in {c.name for c in stage_checks("pcie", shipped())}
    assert applies("pcie", _mi300x())


def test_a_declared_vendor_list_wins_over_words_in_the_embedded_programs() -> None:
    # pcie_links embeds burnin-stress, whose text names nvbandwidth: its declaration decides.
    pcie = ALL_CHECKS["pcie_links"]
    assert "nvbandwidth" in pcie.command(_mi300x()) and pcie.vendors == ("nvidia", "amd")
    assert (
        check_vendor(pcie, _mi300x()) is None
        and fits_vendor(pcie, _mi300x())
        and fits_vendor(pcie, shipped())
    )

    class OnlyAmd(type(pcie)):  # the same command, declared for one vendor
        vendors = ("amd",)

    assert check_vendor(OnlyAmd(), shipped()) == "amd" and not fits_vendor(OnlyAmd(), shipped())


def test_no_nvidia_check_runs_on_amd_but_the_declared_ones() -> None:
    # Every check that runs on the MI300X either names no vendor's tool or declares AMD among its
    # vendors; the NVIDIA checks that load the GPUs the same way stay off it.
    on_amd = _run(_mi300x())
    for name in on_amd:
        check = ALL_CHECKS[name]
        assert "amd" in check.vendors or check_vendor(check, _mi300x()) in (None, "amd"), name
    assert not on_amd & {"gpu_stress", "copy_bandwidth", "gpu_nic_affinity", "dcgm_diag", "gpu_inventory"}
    assert [c.name for c in ALL_CHECKS.values() if c.vendors] == ["pcie_links"]

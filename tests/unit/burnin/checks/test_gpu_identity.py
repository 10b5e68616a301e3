"""The model and PCIe link findings every nvidia-smi reader shares: a name or link the output does
not show is no finding; the current generation (which drops at idle) is never held to the profile."""

from __future__ import annotations

from burnin.checks.gpu_identity import link_findings, model_findings
from burnin.parsers.nvidia_smi import PcieLink
from burnin.result import Action
from tests.profiles import shipped

PROFILE = shipped()  # Gen5 x16, NVIDIA H100 80GB HBM3


def _link(gen_max: int | None, gen_current: int | None, width: int | None) -> PcieLink:
    return PcieLink(gen_max, gen_current, None, None, None, 16, width)


def test_a_name_not_shown_is_no_finding_and_another_model_is_rma() -> None:
    found = model_findings(
        [("GPU 0", None), ("GPU 1", "NVIDIA H100 80GB HBM3"), ("GPU 2", "NVIDIA L40S")], PROFILE.gpu.model
    )
    assert [(f.subject, f.action) for f in found] == [("GPU 2", Action.RMA)]


def test_an_idle_link_passes_a_narrow_or_slow_one_is_reseated() -> None:
    assert link_findings("GPU 0", "GPU 0", _link(5, 1, 16), PROFILE) == []
    assert link_findings("GPU 0", "GPU 0", _link(None, None, None), PROFILE) == []
    narrow = link_findings("GPU 0", "GPU 0", _link(5, 5, 8), PROFILE)
    slow = link_findings("GPU 0", "GPU 0", _link(4, 4, 16), PROFILE)
    assert [f.message for f in narrow] == ["GPU 0 link is x8, expected x16"]
    assert [f.action for f in narrow + slow] == [Action.RESEAT, Action.RESEAT]
    assert "Gen4" in slow[0].message


def test_a_profile_that_leaves_the_gpu_link_unset_judges_no_link() -> None:
    """A GB200's GPUs reach their Grace CPU over NVLink-C2C: a profile with no public figure for
    the GPUs' PCIe link leaves pcie.gpu unset, and no reader holds a link to it."""
    from tests.profiles import minimal

    unset = minimal({"pcie": {"gpu": None, "nic": None}})
    assert unset.pcie.gpu.gen is None and unset.pcie.nic.width is None
    assert link_findings("GPU 0", "GPU 0", _link(3, 3, 8), unset) == []

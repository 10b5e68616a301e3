"""The nvlink check on nvidia-smi's one-sentence answers in place of a GPU's links.

nvidia-smi prints, under a GPU line, "Nvlink queries are not supported for Devices in MIG mode"
(the links cannot be read: UNKNOWN, with MIG mode to turn off), "Device does not have or support
Nvlink" (a part with no NVLink where the profile wants links: FAIL) or NVML's "all links are
inactive" (on the profile's model: the fabric is down, reboot; on another model: the wrong part).
"""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
ONE_GPU = apply_overrides(PROFILE, ("gpu.count=1",))


def _nvlink(text: str, profile=PROFILE):
    return judge(ALL_CHECKS["nvlink"], CommandOutput(stdout=text, rc=0), profile)


def _critical_actions(result) -> set[Action]:
    return {f.action for f in result.findings if f.severity is Severity.CRITICAL}


def test_mig_mode_hides_the_links_and_is_a_configuration_to_fix() -> None:
    r = _nvlink(load("nvidia_smi_nvlink_s_h100_mig_590_48.txt"), ONE_GPU)
    assert r.verdict is Verdict.UNKNOWN, r.findings
    assert "MIG" in r.reason
    assert [(f.severity, f.action) for f in r.findings] == [(Severity.WARNING, Action.RECONFIGURE)]


def test_mig_mode_on_one_gpu_does_not_hide_another_gpus_failure() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n"
        "Nvlink queries are not supported for Devices in MIG mode\n"
        "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n"
        + "".join(f"\t Link {i}: <inactive>\n" for i in range(18))
    )
    r = _nvlink(text, apply_overrides(PROFILE, ("gpu.count=2",)))
    assert r.verdict is Verdict.FAIL and _critical_actions(r) == {Action.RMA}


def test_a_part_without_nvlink_fails_where_the_profile_wants_links() -> None:
    r = _nvlink(load("nvidia_smi_nvlink_s_l40s_595_80.txt"), ONE_GPU)
    assert r.verdict is Verdict.FAIL and _critical_actions(r) == {Action.RMA}
    assert any("no NVLink" in f.message for f in r.findings), r.findings


def test_all_links_inactive_on_another_model_is_the_wrong_part_not_a_fabric_to_reboot() -> None:
    r = _nvlink(load("nvidia_smi_nvlink_s_rtx2080s_610_57.txt"), ONE_GPU)
    assert r.verdict is Verdict.FAIL and _critical_actions(r) == {Action.RMA}, r.findings


def test_all_links_inactive_on_the_profiles_model_is_the_fabric() -> None:
    text = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n"
        "NVML: Unable to retrieve NVLink information as all links are inactive\n"
    )
    r = _nvlink(text, ONE_GPU)
    assert r.verdict is Verdict.FAIL and _critical_actions(r) == {Action.REBOOT}, r.findings


def test_an_answer_cut_short_is_not_judged() -> None:
    r = _nvlink("GPU 0: NVIDIA L40S (UUID: GPU-0)\nDevice does not have or sup", ONE_GPU)
    assert r.verdict is Verdict.UNKNOWN, r.findings

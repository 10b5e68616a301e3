"""gpu_fabric_state on a profile whose GPUs must be in a multi-node NVLink domain (an NVL72 tray:
gpu.multi_node_nvlink): Completed and Success are not enough; each GPU must show its domain."""

from __future__ import annotations

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

CHECK = ALL_CHECKS["gpu_fabric_state"]
NVL72 = shipped("gpu.multi_node_nvlink=true")


def judged(sample: str, profile=NVL72):
    return judge(CHECK, CommandOutput(stdout=load(sample)), profile)


def test_gpus_that_report_no_domain_at_all_fail_where_the_profile_requires_one():
    # Driver 535 prints State and Status but no CliqueId or ClusterUUID: on an HGX node that is
    # fine; on an NVL72 tray nothing shows the GPUs joined the rack's domain.
    assert judged("nvidia_smi_q_8xh100_535_183.txt", shipped()).verdict is Verdict.PASS
    result = judged("nvidia_smi_q_8xh100_535_183.txt")
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert "8 GPU(s)" in finding.message and "ClusterUUID" in finding.message
    assert finding.action is Action.RECONFIGURE


def test_a_whole_domain_still_passes_and_names_it():
    result = judged("nvidia_smi_q_8xh100_535_183_fabric_nvl_domain_DERIVED.txt")
    assert result.verdict is Verdict.PASS and result.metrics["clique_id"] == "4026"


def test_in_progress_and_failed_registration_fail_with_their_actions_on_nvl72_too():
    text = load("nvidia_smi_q_8xh100_535_183_fabric_nvl_domain_DERIVED.txt")
    in_progress = text.replace("Completed", "In Progress", 1)
    result = judge(CHECK, CommandOutput(stdout=in_progress), NVL72)
    assert result.verdict is Verdict.FAIL and result.findings[0].action is Action.RECONFIGURE
    assert "NVLink Subnet Manager" in result.findings[0].message
    failed = judged("nvidia_smi_q_8xh100_535_183_fabric_insufficient_resources_DERIVED.txt")
    assert failed.verdict is Verdict.FAIL and {f.action for f in failed.findings} == {Action.REBOOT}

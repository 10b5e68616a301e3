"""gpu_fabric_state on what its samples do not show: a driver that reports no fabric state, one
GPU silent among the others, two NVLink domains in one node, a degraded domain, and where the
check runs. Its verdicts on real and derived outputs are rows of tests/fixtures/samples/index.tsv."""

from __future__ import annotations

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action, Severity, Verdict
from burnin.service.health import health_checks
from burnin.stages import stage_checks
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

CHECK = ALL_CHECKS["gpu_fabric_state"]  # registered where it is defined (burnin/checks/gpu.py)
PROFILE = shipped()
H100 = load("nvidia_smi_q_8xh100_535_183.txt")
HGX_BLOCK = (
    "    Fabric\n"
    "        State                             : Completed\n"
    "        Status                            : Success\n"
)


def fabric(
    state: str, status: str, clique: str, cluster: str, summary: str = "Healthy", bandwidth: str = "Full"
):
    return (
        "    Fabric\n"
        f"        State                             : {state}\n"
        f"        Status                            : {status}\n"
        f"        CliqueId                          : {clique}\n"
        f"        ClusterUUID                       : {cluster}\n"
        "        Health\n"
        f"            Summary                       : {summary}\n"
        f"            Bandwidth                     : {bandwidth}\n"
    )


DOMAIN = fabric("Completed", "Success", "4026", "9c6f5af3-53bf-49b5-a436-b66766c413c3")


def judged(text: str):
    return judge(CHECK, CommandOutput(stdout=text), PROFILE)


def with_blocks(*blocks: str) -> str:
    """The real 8x H100 output with its GPUs' Fabric sections replaced, first GPU first."""
    parts = H100.split(HGX_BLOCK)  # (a new block starts with the old one's lines: no replace())
    assert len(parts) == 9 and len(blocks) <= 8
    chosen = [*blocks, *[HGX_BLOCK] * (8 - len(blocks))]
    return parts[0] + "".join(block + part for block, part in zip(chosen, parts[1:], strict=True))


def test_a_driver_that_reports_no_fabric_state_is_unknown_never_a_pass():
    # The A10's Fabric section says N/A (a PCIe card, no NVSwitch): nothing to judge.
    result = judged(load("nvidia_smi_q_a10_remapped_rows_pending.txt"))
    assert result.verdict is Verdict.UNKNOWN and "no GPU reports a fabric state" in result.reason


def test_one_gpu_without_a_state_among_registered_ones_is_unknown():
    na = "    Fabric\n        State                             : N/A\n        Status                            : N/A\n"
    result = judged(with_blocks(na))
    assert result.verdict is Verdict.UNKNOWN and "GPU 0 (0000:53:00.0" in result.reason


def test_the_gpus_of_one_node_in_two_nvlink_domains_fail():
    other = fabric("Completed", "Success", "4027", "9c6f5af3-53bf-49b5-a436-b66766c413c3")
    result = judged(with_blocks(other, *[DOMAIN] * 7))
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert "different NVLink domains" in finding.message and "clique 4026" in finding.message


ZERO = fabric("Completed", "Success", "0", "00000000-0000-0000-0000-000000000000", "N/A", "N/A")


def test_gpus_outside_any_multi_node_domain_pass():
    """CliqueId 0 and a zero ClusterUUID on every GPU: what NVML reports for an HGX H100 or H200
    outside a multi-node NVLink domain (the real captures of index.tsv show it on drivers 590)."""
    result = judged(with_blocks(*[ZERO] * 8))
    assert result.verdict is Verdict.PASS and "clique_id" not in result.metrics


def test_a_node_split_between_no_domain_and_a_domain_fails():
    result = judged(with_blocks(ZERO, *[DOMAIN] * 7))
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert "different NVLink domains" in finding.message and finding.action is Action.REBOOT


def test_half_a_domain_fails():
    half = fabric("Completed", "Success", "4026", "00000000-0000-0000-0000-000000000000")
    result = judged(with_blocks(half, *[DOMAIN] * 7))
    assert result.verdict is Verdict.FAIL
    assert [(f.subject.split(" (")[0], f.action) for f in result.findings] == [("GPU 0", Action.REBOOT)]


def test_an_unhealthy_domain_fails_and_degraded_bandwidth_warns():
    unhealthy = fabric("Completed", "Success", "4026", "9c6f5af3-53bf-49b5-a436-b66766c413c3", "Unhealthy")
    assert judged(with_blocks(unhealthy, *[DOMAIN] * 7)).verdict is Verdict.FAIL
    degraded = fabric(
        "Completed", "Success", "4026", "9c6f5af3-53bf-49b5-a436-b66766c413c3", bandwidth="Degraded"
    )
    result = judged(with_blocks(degraded, *[DOMAIN] * 7))
    assert result.verdict is Verdict.WARN
    assert [f.severity for f in result.findings] == [Severity.WARNING]


@pytest.mark.parametrize("state", ["Not Started", "In Progress"])
def test_a_registration_not_completed_is_a_fabric_manager_matter(state):
    result = judged(with_blocks(fabric(state, "N/A", "N/A", "N/A", "N/A", "N/A")))
    assert result.verdict is Verdict.FAIL and result.findings[0].action is Action.RECONFIGURE


def test_it_runs_in_preflight_and_in_service_on_nvswitch_systems_only():
    assert CHECK in stage_checks("preflight", PROFILE)
    assert CHECK in health_checks(PROFILE)
    pcie_card = shipped("gpu.nvswitch=false")
    assert CHECK not in stage_checks("preflight", pcie_card) and CHECK not in health_checks(pcie_card)


def test_a_tray_of_a_multi_node_nvlink_domain_whose_gpus_joined_none_fails():
    """On an NVL72 compute tray (gpu.multi_node_nvlink) every GPU must join the rack's NVLink
    domain: CliqueId 0 with a zero ClusterUUID is a tray that did not register, not a pass."""
    nvl72 = shipped("gpu.multi_node_nvlink=true")
    result = judge(CHECK, CommandOutput(stdout=with_blocks(*[ZERO] * 8)), nvl72)
    assert result.verdict is Verdict.FAIL
    assert {f.action for f in result.findings} == {Action.REBOOT}
    assert any("no multi-node NVLink domain" in f.message for f in result.findings)
    assert judge(CHECK, CommandOutput(stdout=with_blocks(*[DOMAIN] * 8)), nvl72).verdict is Verdict.PASS

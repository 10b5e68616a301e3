"""nvidia-smi's error-only answers (real pastes from public issues) are failures with their action,
for `burnin evaluate` and for every check that reads an nvidia-smi output: a GPU lost from the bus
(reboot, as for Xid 79), no GPU found (reboot, then reseat), no driver (reinstall it)."""

from __future__ import annotations

import pytest

from burnin.checks import REGISTRY
from burnin.checks.base import CommandOutput, judge
from burnin.evaluate.handed_in import evaluate_text, judging_checks
from burnin.result import Action, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
ANSWERS = {
    "nvidia_smi_error_gpu_handle_unknown_error_p4_PARTIAL.txt": Action.REBOOT,
    "nvidia_smi_error_gpu_handle_unknown_error_a_i0_PARTIAL.txt": Action.REBOOT,
    "nvidia_smi_error_gpu_is_lost_windows_PARTIAL.txt": Action.REBOOT,
    "nvidia_smi_error_no_devices_found_rtx5090_PARTIAL.txt": Action.REBOOT,
    "nvidia_smi_error_no_devices_found_container_PARTIAL.txt": Action.REBOOT,
    "nvidia_smi_error_no_driver_PARTIAL.txt": Action.RECONFIGURE,
    "nvidia_smi_error_no_driver_two_lines_PARTIAL.txt": Action.RECONFIGURE,
}
# nvidia-smi's exit statuses for these answers (nvidia-smi(1), RETURN VALUE): 6 no GPU found,
# 9 no driver, 15 a GPU lost; the checks must not depend on which.
EXIT_STATUSES = (0, 6, 9, 15, 255)


def _smi_readers() -> list[str]:
    tools = {
        tool for check in judging_checks().values() for tool in check.reads if tool.startswith("nvidia-smi")
    }
    return sorted({name for tool in tools for name in REGISTRY.readers(tool)} - {"container_gpu"})


@pytest.mark.parametrize("sample", sorted(ANSWERS))
def test_burnin_evaluate_fails_an_error_only_answer_with_its_action(sample: str) -> None:
    evaluation = evaluate_text(load(sample), PROFILE)
    assert evaluation.tool == "nvidia-smi (error answer)", evaluation.recognition.reason
    assert evaluation.verdict is Verdict.FAIL, evaluation.reason
    assert {f["action"] for f in evaluation.findings()} == {ANSWERS[sample].value}


@pytest.mark.parametrize("sample", sorted(ANSWERS))
def test_every_check_that_reads_nvidia_smi_fails_it(sample: str) -> None:
    checks = judging_checks()
    readers = _smi_readers()
    assert {"gpu_inventory", "gpu_ecc", "gpu_memory", "gpu_versions", "nvlink", "gpu_query_csv"} <= set(
        readers
    )
    for name in readers:
        for rc in EXIT_STATUSES:
            result = judge(checks[name], CommandOutput(load(sample), rc=rc), PROFILE)
            assert result.verdict is Verdict.FAIL, (name, rc, result.reason)
            assert {f.action for f in result.findings} == {ANSWERS[sample]}, (name, rc)


def test_the_lost_gpu_is_named_by_its_bus_address() -> None:
    result = judge(
        judging_checks()["gpu_inventory"],
        CommandOutput(load("nvidia_smi_error_gpu_handle_unknown_error_p4_PARTIAL.txt"), rc=15),
        PROFILE,
    )
    assert [f.subject for f in result.findings] == ["GPU 0000:07:00.0"]


def test_a_whole_output_that_mentions_no_such_answer_is_judged_as_before() -> None:
    text = load("nvidia_smi_q_8xh100_535_183.txt")
    assert judge(judging_checks()["gpu_inventory"], CommandOutput(text), PROFILE).verdict is Verdict.PASS

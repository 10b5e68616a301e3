"""gpu_query_csv judges every column of a --query-gpu CSV the profile has an expectation for: the
GPU count (unless a ``-i`` filter shows the CSV lists some GPUs only), the model, the driver, ECC
mode, the PCIe link, throttle reasons; an expectation with no column is listed as not covered."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.result import Action, Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
L40S = load("nvidia_smi_query_gpu_pcie_link_csv_8xl40s_idle_gen1.txt")
HEADER = "index, name, driver_version, ecc.mode.current, pcie.link.gen.max, pcie.link.width.current"


def _judge(text: str, *overrides: str):
    profile = apply_overrides(PROFILE, overrides)
    return judge(EVIDENCE_CHECKS["gpu_query_csv"], CommandOutput(text), profile)


def _csv(count: int = 8, name="NVIDIA H100 80GB HBM3", driver="535.183.01", ecc="Enabled") -> str:
    rows = [f"{i}, {name}, {driver}, {ecc}, 5, 16" for i in range(count)]
    return "\n".join([HEADER, *rows]) + "\n"


def test_the_real_8_gpu_capture_passes_and_says_what_it_did_not_show() -> None:
    result = _judge(L40S, "pcie.gpu.gen=4")
    assert result.verdict is Verdict.PASS
    assert result.not_covered == ("gpu.model", "pins.driver")


def test_seven_or_one_gpu_on_an_eight_gpu_profile_fails() -> None:
    lines = L40S.splitlines()
    seven = "\n".join(line for line in lines if not line.startswith("7, ")) + "\n"
    one = "\n".join(line for line in lines if not line[:1].isdigit() or line.startswith("0, ")) + "\n"
    for text, count in ((seven, 7), (one, 1)):
        result = _judge(text, "pcie.gpu.gen=4")
        assert result.verdict is Verdict.FAIL, (count, result)
        failures = [f for f in result.findings if f.severity is Severity.CRITICAL]
        assert [f.action for f in failures] == [Action.RESEAT]
        assert f"{count} GPU(s)" in failures[0].message


def test_a_csv_of_all_columns_passes_with_nothing_left_uncovered() -> None:
    result = _judge(_csv())
    assert result.verdict is Verdict.PASS
    assert result.not_covered == ()


def test_a_count_other_than_the_profile_fails_every_section() -> None:
    assert _judge(_csv(9)).verdict is Verdict.FAIL
    two = _csv() + _csv(7)  # idle, then under load with a GPU gone
    assert _judge(two).verdict is Verdict.FAIL


def test_the_model_the_driver_and_ecc_mode_are_judged() -> None:
    for text, action in (
        (_csv(name="NVIDIA GeForce RTX 4090"), Action.RMA),
        (_csv(driver="550.54.15"), Action.RECONFIGURE),
        (_csv(ecc="Disabled"), Action.RECONFIGURE),
    ):
        result = _judge(text)
        assert result.verdict is Verdict.FAIL, text
        assert {f.action for f in result.findings} == {action}


def test_ecc_mode_not_reported_is_not_a_pass() -> None:
    assert _judge(_csv(ecc="[N/A]")).verdict is Verdict.UNKNOWN


def test_a_query_of_some_gpus_does_not_judge_the_count() -> None:
    text = "$ nvidia-smi -i 0 --query-gpu=index,name,pcie.link.gen.max --format=csv\n"
    text += "index, name, pcie.link.gen.max\n0, NVIDIA H100 80GB HBM3, 5\n"
    result = _judge(text)
    assert result.verdict is Verdict.PASS
    assert "gpu.count" in result.not_covered
    assert _judge(text.replace("-i 0 ", "")).verdict is Verdict.FAIL


def test_the_csv_holds_no_link_to_a_profile_that_leaves_it_unset():
    from tests.profiles import minimal

    unset = minimal(
        {"pcie": {"gpu": None}, "gpu": {"count": 8, "model": "NVIDIA L40S"}, "pins": {"driver": "595.80"}}
    )
    text = load("nvidia_smi_query_gpu_pcie_link_csv_8xl40s_idle_gen1.txt")
    result = judge(EVIDENCE_CHECKS["gpu_query_csv"], CommandOutput(stdout=text), unset)
    assert not [f for f in result.findings if "Gen" in f.message or "link is x" in f.message]

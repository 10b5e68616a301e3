"""Each check recognises its own tool's output, so anything else is UNKNOWN.

The defects it reproduced: kernel_log passed any text; the `nvidia-smi -q` checks passed when
the GPU blocks disagreed with "Attached GPUs" (concatenated or cut output).
"""

from __future__ import annotations

import json
import re

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load, names_expecting_misses

PROFILE = shipped()


def _judge(check: str, text: str):
    return judge(ALL_CHECKS[check], CommandOutput(stdout=text), PROFILE)


@pytest.mark.parametrize(
    "text",
    [
        "aGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0IGFuZCBub3QgYSBrZXJuZWwgbG9n\n",
        "hello world\n",
        "\x00\x00\x00\x00\n",
        load("ibstat_h100_ndr_all_active.txt"),
    ],
    ids=["base64", "hello", "nul", "ibstat"],
)
def test_kernel_log_is_unknown_for_text_without_kernel_log_lines(text):
    result = _judge("kernel_log", text)
    assert result.verdict is Verdict.UNKNOWN
    assert "kernel-log line" in result.reason


@pytest.mark.parametrize("name", names_expecting_misses("dmesg_", "UNKNOWN"))
def test_kernel_log_recognises_every_dmesg_sample(name):
    result = _judge("kernel_log", load(name))
    assert result.verdict is not Verdict.UNKNOWN, result.reason


def test_kernel_log_is_unknown_when_a_few_log_lines_are_pasted_into_other_output():
    text = load("ibstat_h100_ndr_all_active.txt") + "[    1.234567] Linux version 5.15.0\n"
    assert _judge("kernel_log", text).verdict is Verdict.UNKNOWN


def _smi_q() -> str:
    return load("nvidia_smi_q_8xh100_535_183.txt")


def _gpu_blocks(text: str) -> tuple[str, list[str]]:
    parts = re.split(r"(?m)^(?=GPU [0-9A-Fa-f]{8}:)", text)
    return parts[0], parts[1:]


def test_smi_q_with_more_blocks_than_attached_gpus_is_never_a_pass():
    head, blocks = _gpu_blocks(_smi_q())
    text = head + "".join(blocks * 71)  # 568 blocks against "Attached GPUs : 8"
    for check in ("gpu_ecc", "gpu_versions", "gpu_memory", "gpu_inventory"):
        result = _judge(check, text)
        assert result.verdict is Verdict.UNKNOWN, (check, result.verdict)
        assert "568 GPU block(s)" in result.reason


def test_smi_q_cut_after_five_of_eight_blocks_is_never_a_pass():
    head, blocks = _gpu_blocks(_smi_q())
    text = head + "".join(blocks[:5])
    assert text.endswith("\n")
    for check in ("gpu_ecc", "gpu_versions", "gpu_memory", "gpu_inventory"):
        result = _judge(check, text)
        assert result.verdict is Verdict.UNKNOWN, (check, result.verdict)
        assert "5 GPU block(s)" in result.reason


STANDINS = REPO / "bringup" / "lab" / "standins" / "samples"


def _standin(name: str) -> str:
    return (STANDINS / name).read_text(encoding="utf-8").partition("\n")[2]


def _stress_output(report: str) -> str:
    throttle = _standin("nvidia_smi_query_throttle_8xh100_load_SYNTHETIC.txt")
    return f"@@burnin-section stress\n{report}\n@@burnin-section throttle\n{throttle}"


def test_stress_report_sample_passes():
    assert (
        _judge("gpu_stress", _stress_output(_standin("burnin_stress_8xh100_SYNTHETIC.json"))).verdict
        is Verdict.PASS
    )


@pytest.mark.parametrize("value", ["Infinity", "NaN", "1e999", "1e300", "-5", '"fast"'])
def test_stress_report_with_non_finite_or_absurd_tflops_is_unknown(value):
    report = re.sub(
        r'"tflops": [0-9.]+', f'"tflops": {value}', _standin("burnin_stress_8xh100_SYNTHETIC.json")
    )
    result = _judge("gpu_stress", _stress_output(report))
    assert result.verdict is Verdict.UNKNOWN, result
    assert "JSON holds" in result.reason or "tflops" in result.reason


@pytest.mark.parametrize("value", ["Infinity", "1e999"])
def test_dcgmi_json_with_non_finite_number_is_unknown(value):
    text = _standin("dcgmi_diag_r3_j_8xh100_dcgm338_pass_DERIVED.json")
    bad = text.replace("{", f'{{"elapsed_s": {value}, ', 1)  # any number in the document
    result = _judge("dcgm_diag", bad)
    assert result.verdict is Verdict.UNKNOWN and "JSON holds" in result.reason


def _pcie_output(speed: str, width: str) -> str:
    dev = {
        "bdf": "0000:19:00.0",
        "vendor": "0x10de",
        "class": "0x030200",
        "current_link_speed": speed,
        "current_link_width": width,
        "max_link_speed": "32.0 GT/s PCIe",
        "max_link_width": "16",
    }
    doc = json.dumps({"devices": [dev]})
    stress = _standin("burnin_stress_8xh100_SYNTHETIC.json")
    return (
        f"@@burnin-section idle\n{doc}\n@@burnin-section load1\n{doc}\n@@burnin-section stress\n{stress}\n"
        f"@@burnin-section after\n{doc}\n@@burnin-section kernel\n"
    )


def test_pcie_links_real_gen5_x16_reading_passes():
    assert _judge("pcie_links", _pcie_output("32.0 GT/s PCIe", "16")).verdict is Verdict.PASS


@pytest.mark.parametrize(("speed", "width"), [("999 GT/s PCIe", "16"), ("32.0 GT/s PCIe", "999")])
def test_pcie_links_absurd_speed_or_width_is_never_a_pass(speed, width):
    result = _judge("pcie_links", _pcie_output(speed, width))
    assert result.verdict is Verdict.UNKNOWN, result


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "1e999", "-5", "1_700_000_000"])
def test_clock_offset_refuses_what_date_never_prints(text):
    now = 1_795_000_000.0
    out = CommandOutput(stdout=f"{text}\n", started_at=now - 0.1, finished_at=now + 0.1)
    result = judge(ALL_CHECKS["clock_offset"], out, PROFILE)
    assert result.verdict is Verdict.UNKNOWN, result


def test_clock_offset_reads_dates_own_output():
    out = CommandOutput(
        stdout="1795000000.012345678\n", started_at=1_795_000_000.0, finished_at=1_795_000_000.1
    )
    assert judge(ALL_CHECKS["clock_offset"], out, PROFILE).verdict is Verdict.PASS


def test_ib_ports_rate_beyond_any_link_is_never_a_pass():
    text = _standin("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")
    assert _judge("ib_ports", text).verdict is Verdict.PASS
    assert _judge("ib_ports", text.replace("Rate: 400", "Rate: 40000000")).verdict is Verdict.UNKNOWN

"""The checks that judge handed-in outputs (burnin.checks.evidence) on the real captures and on
inputs derived from them: lspci per device and slot, perftest's --out_json unit, the NCCL floor
chosen from the rank lines, gpu-burn cut before its summary, perfquery refusing other tools."""

from __future__ import annotations

import json
import re

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.result import Severity, Verdict
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
LAB = REPO / "bringup" / "lab" / "standins" / "samples"


def _judge(check: str, text: str, *overrides: str):
    return judge(EVIDENCE_CHECKS[check], CommandOutput(text), apply_overrides(PROFILE, overrides))


def _lab(name: str) -> str:
    return (LAB / name).read_text(encoding="utf-8").split("\n", 1)[1]


def test_lspci_names_the_device_and_its_slot() -> None:
    text = load("lspci_vv_cx7_downtrained_16gt_x8.txt")
    first, _, rest = text.partition("\n")
    result = _judge("pcie_lspci", f"{first}\n\tPhysical Slot: 7\n{rest}")
    assert result.verdict is Verdict.FAIL
    messages = [f.message for f in result.findings]
    assert (
        "NIC 0000:b1:00.1 slot 7 (serial MT2304XZ02VD) link is x8, expected x16 (the device can do x16)"
        in messages
    )
    assert (
        "NIC 0000:b1:00.1 slot 7 (serial MT2304XZ02VD) link runs at Gen4 (16 GT/s), expected Gen5" in messages
    )


def test_lspci_gpu_speed_at_idle_is_a_note_but_its_width_fails() -> None:
    text = load("lspci_vv_h100_gpu_gen5_x16_ok.txt")
    idle = text.replace("LnkSta:\tSpeed 32GT/s (ok)", "LnkSta:\tSpeed 2.5GT/s (downgraded)")
    assert idle != text
    result = _judge("pcie_lspci", idle)
    assert result.verdict is Verdict.PASS
    assert [f.severity for f in result.findings] == [Severity.INFO]
    narrow = text.replace("Width x16 (ok)", "Width x8 (downgraded)")
    assert _judge("pcie_lspci", narrow).verdict is Verdict.FAIL


def test_lspci_with_only_bridges_is_unknown() -> None:
    result = _judge("pcie_lspci", load("lspci_vv_pcie_switch_port_speed_downgraded_benign.txt"))
    assert result.verdict is Verdict.UNKNOWN and "no GPU, NIC or NVMe" in result.reason


def _json_doc() -> dict:
    return json.loads(_lab("ib_write_bw_out_json_ndr_cx7_DERIVED.json"))


def test_perftest_json_unit_is_told_by_the_message_rate() -> None:
    gbits = _judge("perftest_bw", json.dumps(_json_doc()) + "\n")
    assert gbits.verdict is Verdict.PASS and gbits.metrics["reports"][0]["gbps"] == 392.34
    doc = _json_doc()
    doc["results"].update(BW_peak=46567.34, BW_average=46557.03, MsgRate=0.744912)  # MiB/s, as ib_send_bw
    mib = _judge("perftest_bw", json.dumps(doc) + "\n")
    assert mib.verdict is Verdict.PASS and round(mib.metrics["reports"][0]["gbps"]) == 391
    doc["results"].update(BW_average=120.0)  # matches neither unit: not a real report
    odd = _judge("perftest_bw", json.dumps(doc) + "\n")
    assert odd.verdict is Verdict.UNKNOWN and "unit cannot be told" in odd.reason


def test_perftest_below_the_floor_fails_a_write_and_warns_a_read() -> None:
    result = _judge("perftest_bw", load("perftest_ndr_cx7_client_send_read_write_bw.txt"), "ib.rate_gbps=420")
    by_test = {f.message.split("(")[1].split(",")[0]: f.severity for f in result.findings}
    assert by_test == {
        "Send BW Test": Severity.CRITICAL,
        "RDMA_Read BW Test": Severity.WARNING,
        "RDMA_Write BW Test": Severity.CRITICAL,
    }


def test_nccl_floor_is_single_or_multi_node_from_the_rank_lines() -> None:
    single = _judge("nccl_tests", load("nccl_tests_all_reduce_perf_8xa100_ok.txt"))
    assert single.metrics["floor"] == "single-node (NVLink)" and single.metrics["floor_gbps"] == 460
    multi = _judge("nccl_tests", load("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt"))
    assert multi.metrics["floor"] == "multi-node (2 nodes)" and multi.metrics["floor_gbps"] == 360


def test_nccl_output_without_rank_lines_has_no_floor_and_is_unknown() -> None:
    text = re.sub(r"(?m)^#\s+Rank .*\n", "", load("nccl_tests_all_reduce_perf_8xa100_ok.txt"))
    result = _judge("nccl_tests", text)
    assert result.verdict is Verdict.UNKNOWN and "single- or multi-node cannot be told" in result.reason


def test_nccl_cut_before_the_footer_is_unknown() -> None:
    text = load("nccl_tests_all_reduce_perf_8xa100_ok.txt")
    cut = text[: text.index("# Out of bounds")]
    result = _judge("nccl_tests", cut, "floors.nccl_busbw_single_node_gbps=228")
    assert result.verdict is Verdict.UNKNOWN and "footer" in result.reason
    whole = _judge("nccl_tests", text, "floors.nccl_busbw_single_node_gbps=228")
    assert whole.verdict is Verdict.PASS
    unclosed = _judge(
        "nccl_tests", text.rstrip("\n").removesuffix("#"), "floors.nccl_busbw_single_node_gbps=228"
    )
    assert unclosed.verdict is Verdict.UNKNOWN and "closing '#'" in unclosed.reason


def test_gpu_burn_cut_before_its_summary_is_unknown() -> None:
    text = load("gpu_burn_8xa100_ok.txt")
    cut = text[: text.index("Tested ")]
    assert _judge("gpu_burn", text).verdict is Verdict.PASS
    result = _judge("gpu_burn", cut)
    assert result.verdict is Verdict.UNKNOWN and "did not finish" in result.reason


def test_perfquery_refuses_ibstat_name_value_lines() -> None:
    result = _judge("perfquery_counters", load("ibstat_h100_ndr_all_active.txt"))
    assert result.verdict is Verdict.UNKNOWN and "not perfquery output" in result.reason


def test_query_gpu_csv_without_a_header_is_unknown_unless_it_is_the_throttle_sampler() -> None:
    rows = "0, 4, 4, 16, 16\n1, 4, 4, 16, 16\n"
    result = _judge("gpu_query_csv", rows)
    assert result.verdict is Verdict.UNKNOWN and "without its header" in result.reason
    sampler = _judge("gpu_query_csv", _lab("nvidia_smi_query_throttle_8xh100_load_SYNTHETIC.txt"))
    assert sampler.verdict is Verdict.PASS and sampler.metrics["gpus"] == 8


def test_query_gpu_csv_with_units_and_other_fields_is_recognised_and_judged() -> None:
    from burnin.evaluate.handed_in import evaluate_text

    text = (
        "timestamp, index, temperature.gpu, power.draw [W], pcie.link.gen.max, pcie.link.width.current\n"
        "2026/11/24 06:00:00.000, 0, 45, 690.12 W, 5, 16\n"
        "2026/11/24 06:00:00.000, 1, 47, 688.40 W, 5, 8\n"
    )
    two_gpus = apply_overrides(PROFILE, ["gpu.count=2"])  # the capture lists two GPUs
    evaluation = evaluate_text(text, two_gpus)
    assert evaluation.tool == "nvidia-smi --query-gpu CSV" and evaluation.verdict is Verdict.FAIL
    assert [f["message"] for f in evaluation.findings()] == ["GPU 1 link is x8, expected x16"]
    assert evaluate_text(text.replace(", 8\n", ", 16\n"), two_gpus).verdict is Verdict.PASS


def test_nccl_tests_json_is_recognised_and_judged_against_the_multi_node_floor() -> None:
    from burnin.evaluate.handed_in import evaluate_text
    from tests.unit.burnin.parsers.test_nccl_tests import JSON_DOC

    text = json.dumps(JSON_DOC, indent=1) + "\n"
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.tool == "nccl-tests" and evaluation.checks == ("nccl_tests",)
    (result,) = evaluation.results
    assert result.metrics["floor"] == "multi-node (2 nodes)" and result.metrics["floor_gbps"] == 360
    busbw = result.metrics["busbw_gbps"]
    assert evaluation.verdict is (Verdict.PASS if busbw >= 360 else Verdict.FAIL)
    cut = evaluate_text(text[: len(text) // 2] + "\n", PROFILE)
    assert cut.verdict is Verdict.UNKNOWN and "does not decode" in cut.reason


def test_query_gpu_csv_refuses_absurd_or_missing_link_values() -> None:
    header = "index, pcie.link.gen.max, pcie.link.width.current\n"
    assert _judge("gpu_query_csv", header + "0, 5, 16\n", "gpu.count=1").verdict is Verdict.PASS
    for row in ("0, 5, 999\n", "0, 99, 16\n", "0, 5, -16\n"):
        result = _judge("gpu_query_csv", header + row, "gpu.count=1")
        assert result.verdict is Verdict.UNKNOWN and "not a PCIe link value" in result.reason, row
    missing = _judge("gpu_query_csv", header + "0, [N/A], [N/A]\n")
    assert missing.verdict is Verdict.UNKNOWN and "all [N/A]" in missing.reason


def test_lspci_refuses_a_width_or_speed_no_link_has() -> None:
    text = load("lspci_vv_h100_gpu_gen5_x16_ok.txt")
    for bad in (
        text.replace("Width x16 (ok)", "Width x999 (ok)"),
        text.replace("Speed 32GT/s (ok)", "Speed 999GT/s (ok)"),
    ):
        assert bad != text
        result = _judge("pcie_lspci", bad)
        assert result.verdict is Verdict.UNKNOWN and "is not a PCIe" in result.reason


def test_perftest_from_gpu_memory_is_judged_against_the_gpudirect_floor() -> None:
    """A handed-in --use_cuda run (the CUDA lines say so) is held to floors.ib_gdr_write_fraction
    (0.95 x 400 = 380 Gb/s), not the host-memory floor (388), and says which GPU it loaded."""
    text = load("ib_write_bw_use_cuda_dmabuf_h200_client.txt")
    result = _judge("perftest_bw", text)
    assert result.metrics["floor_gbps"] == 380.0
    assert result.metrics["gpu_memory"] == {"cuda_device": 0, "dmabuf": True}
    assert any("GPU 0" in f.message and "DMA-BUF" in f.message for f in result.findings)
    host = _judge("perftest_bw", load("perftest_ndr_cx7_client_send_read_write_bw.txt"))
    assert host.metrics["floor_gbps"] == 388.0 and "gpu_memory" not in host.metrics

"""Copy bandwidth parsers on real nvbandwidth / bandwidthTest runs (tests/fixtures/samples), the
lab's derived H100 recordings, and the burnin-stress --copy-bandwidth report."""

from __future__ import annotations

import json

import pytest

from burnin.parsers import ParseError
from burnin.parsers.nvbandwidth import parse_copy_bandwidth
from tests.paths import REPO
from tests.unit.burnin.parsers._samples import load

LAB = REPO / "bringup" / "lab" / "standins" / "samples"


def lab(name: str) -> str:
    return (LAB / name).read_text().split("\n", 1)[1]


def test_nvbandwidth_v08_one_gpu_sm_host_to_device():
    data = parse_copy_bandwidth(load("nvbandwidth_v0_8_a100_h2d_sm_1gpu.txt"))
    assert (data.tool, data.version, data.method, data.complete) == ("nvbandwidth", "v0.8", "SM", True)
    (gpu,) = data.gpus
    assert (gpu.index, gpu.name, gpu.bus_id) == (0, "NVIDIA A100-SXM4-40GB", "00000000:99:00")
    assert (gpu.h2d_gbps, gpu.d2h_gbps) == (25.13, None)
    assert data.errors == () and data.problems == ()


def test_nvbandwidth_v02_eight_gpus_both_directions_old_layout():
    data = parse_copy_bandwidth(load("nvbandwidth_v0_2_8x4090_h2d_d2h_ce_PARTIAL.txt"))
    assert (data.version, data.method) == ("v0.2", "CE")
    assert data.complete  # before 0.7 nothing follows the last testcase: whole blocks are whole
    assert [g.h2d_gbps for g in data.gpus] == [25.50, 24.26, 23.90, 26.30, 26.28, 26.38, 26.09, 26.31]
    assert [g.d2h_gbps for g in data.gpus] == [26.77, 26.47, 26.25, 26.63, 27.10, 27.11, 27.11, 26.83]
    assert all(g.name == "NVIDIA GeForce RTX 4090" and g.bus_id is None for g in data.gpus)


def test_nvbandwidth_other_testcases_give_no_copy_figure():
    data = parse_copy_bandwidth(load("nvbandwidth_v0_8_8xh20_device_local_copy.txt"))
    assert data.complete and len(data.gpus) == 8
    assert all(g.h2d_gbps is None and g.d2h_gbps is None for g in data.gpus)


def test_lab_recordings_parse_to_their_figures():
    healthy = parse_copy_bandwidth(lab("nvbandwidth_h2d_d2h_ce_8xh100_DERIVED.txt"))
    slow = parse_copy_bandwidth(lab("nvbandwidth_h2d_d2h_ce_8xh100_gpu5_h2d_slow_DERIVED.txt"))
    assert healthy.complete and slow.complete and len(healthy.gpus) == 8
    assert [g.bus_id for g in healthy.gpus][:2] == ["00000000:53:00", "00000000:64:00"]
    assert slow.gpu(5).h2d_gbps == 26.39 and slow.gpu(5).d2h_gbps == healthy.gpu(5).d2h_gbps == 52.77


def test_bandwidth_test_one_device():
    data = parse_copy_bandwidth(load("bandwidthTest_a100_sxm4_40gb_quick_pinned.txt"))
    assert (data.tool, data.method, data.complete) == ("bandwidthTest", "PINNED", True)
    (gpu,) = data.gpus
    assert (gpu.index, gpu.name, gpu.h2d_gbps, gpu.d2h_gbps) == (0, "NVIDIA A100-SXM4-40GB", 12.3, 13.2)


def test_bandwidth_test_runs_one_per_device_and_the_all_devices_sum():
    one = load("bandwidthTest_a100_sxm4_40gb_quick_pinned.txt")
    two = one.replace("Device 0:", "Device 1:").replace("12.3", "6.1")
    data = parse_copy_bandwidth(one + two)
    assert [(g.index, g.h2d_gbps) for g in data.gpus] == [(0, 12.3), (1, 6.1)] and data.complete
    # --device=all: every device listed, each figure the SUM over them (bandwidthTest.cu)
    summed = one.replace(" Device 0: NVIDIA A100-SXM4-40GB\n", " Device 0: A\n Device 1: B\n").replace(
        "1 Device(s)", "2 Device(s)"
    )
    data = parse_copy_bandwidth(summed)
    assert data.cumulative == {"h2d": (2, 12.3), "d2h": (2, 13.2)}
    assert all(g.h2d_gbps is None for g in data.gpus)


def test_bandwidth_test_csv_lines():
    text = (
        "[CUDA Bandwidth Test] - Starting...\nRunning on...\n\n Device 0: NVIDIA H100 80GB HBM3\n Quick Mode\n\n"
        "bandwidthTest-H2D-Pinned, Bandwidth = 55.2 GB/s, Time = 0.00058 s, Size = 32000000 bytes, NumDevsUsed = 1\n"
        "bandwidthTest-D2H-Pinned, Bandwidth = 54.9 GB/s, Time = 0.00058 s, Size = 32000000 bytes, NumDevsUsed = 1\n"
        "Result = PASS\n"
    )
    (gpu,) = parse_copy_bandwidth(text).gpus
    assert (gpu.h2d_gbps, gpu.d2h_gbps) == (55.2, 54.9)


def test_stress_copy_report():
    report = {
        "tool": "burnin-stress",
        "version": 1,
        "mode": "copy-bandwidth",
        "backend": "torch 2.3.0",
        "error": None,
        "gpus": [
            {
                "index": 0,
                "name": "NVIDIA H100 80GB HBM3",
                "pci_bus_id": "00000000:53:00.0",
                "h2d_gbps": 53.1,
                "d2h_gbps": 54.0,
            },
            {"index": 1, "error": "RuntimeError: CUDA error: an illegal memory access"},
        ],
    }
    data = parse_copy_bandwidth(json.dumps(report) + "\n")
    assert data.tool == "burnin-stress" and data.complete and data.method == "torch 2.3.0"
    assert (data.gpu(0).h2d_gbps, data.gpu(0).bus_id, data.gpu(1).error[:12]) == (
        53.1,
        "00000000:53:00.0",
        "RuntimeError",
    )


@pytest.mark.parametrize(
    "report",
    [
        {"tool": "burnin-stress", "version": 1, "gpus": []},  # the matmul report, not --copy-bandwidth
        {"tool": "other", "mode": "copy-bandwidth", "gpus": []},
        {"tool": "burnin-stress", "mode": "copy-bandwidth", "gpus": [{"index": True, "h2d_gbps": 5}]},
        {"tool": "burnin-stress", "mode": "copy-bandwidth", "gpus": [{"index": 0, "h2d_gbps": -3}]},
        {"tool": "burnin-stress", "mode": "copy-bandwidth", "gpus": [{"index": 0, "h2d_gbps": 1e9}]},
        {"tool": "burnin-stress", "mode": "copy-bandwidth", "gpus": "none"},
    ],
)
def test_stress_reports_that_are_not_copy_figures_are_refused(report):
    with pytest.raises(ParseError):
        parse_copy_bandwidth(json.dumps(report))


def test_nvbandwidth_cut_inside_a_testcase_says_so():
    text = load("nvbandwidth_v0_8_a100_h2d_sm_1gpu.txt")
    cut = text[: text.index("SUM host_to_device")]
    data = parse_copy_bandwidth(cut)
    assert not data.complete and "no SUM line" in data.problems[0]
    cut_before_end = text[: text.index("Performance can vary")]
    assert not parse_copy_bandwidth(cut_before_end).complete  # the last NOTE line is the end


def test_nvbandwidth_errors_are_kept():
    text = (
        "nvbandwidth Version: v0.7\nBuilt from Git version: v0.7\n\nCUDA Runtime Version: 12040\n"
        "CUDA Driver Version: 12040\nDriver Version: 550.127.08\n\n"
        "Device 0: NVIDIA A100-SXM4-80GB (00000000:34:00)\n\nRunning host_to_device_memcpy_ce.\n"
        "[CUDA_ERROR_OUT_OF_MEMORY] out of memory\n"
    )
    data = parse_copy_bandwidth(text)
    assert data.errors == ("host_to_device_memcpy_ce: [CUDA_ERROR_OUT_OF_MEMORY] out of memory",)
    assert data.gpu(0).h2d_gbps is None and not data.complete


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "hello\n",
        "SUM host_to_device_memcpy_ce 55\n",
        '{"a": 1}\n',
        "{not json\n",
        "nan\n",
        "\x00\x01",
    ],
)
def test_garbage_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_copy_bandwidth(text)


def test_absurd_figures_are_parse_errors():
    text = load("nvbandwidth_v0_8_a100_h2d_sm_1gpu.txt").replace(" 0     25.13", " 0  99999999.00")
    with pytest.raises(ParseError, match="not a real figure"):
        parse_copy_bandwidth(text)

"""copy_bandwidth: each GPU and direction against the profile's floor for its PCIe link and
against the node's best GPU; outputs that cannot be judged are UNKNOWN."""

from __future__ import annotations

import json

import pytest

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.copy_bandwidth import NVBANDWIDTH, CopyBandwidthCheck, link_gbytes
from burnin.result import Action, Severity, Verdict
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

CHECK = CopyBandwidthCheck()
PROFILE = shipped()
LAB = REPO / "bringup" / "lab" / "standins" / "samples"
HEALTHY = (LAB / "nvbandwidth_h2d_d2h_ce_8xh100_DERIVED.txt").read_text().split("\n", 1)[1]
SLOW = (LAB / "nvbandwidth_h2d_d2h_ce_8xh100_gpu5_h2d_slow_DERIVED.txt").read_text().split("\n", 1)[1]


def run(text: str, profile=PROFILE, rc: int = 0):
    return judge(CHECK, CommandOutput(stdout=text, rc=rc), profile)


def criticals(result):
    return [f for f in result.findings if f.severity is Severity.CRITICAL]


def test_link_rates_by_generation():
    assert link_gbytes(5, 16) == 63.0 and link_gbytes(4, 16) == 31.5 and link_gbytes(5, 8) == 31.5
    assert link_gbytes(1, 16) == 4.0 and link_gbytes(9, 16) is None


def test_command_prefers_nvbandwidth_and_falls_back_to_burnin_stress():
    script = CHECK.command(PROFILE)
    assert script.startswith("if command -v nvbandwidth") and NVBANDWIDTH in script
    assert "--copy-bandwidth" in script and "burnin-stress" in script and CHECK.stage == "gpu"


def test_healthy_h100_node_passes_with_its_figures():
    result = run(HEALTHY)
    assert result.verdict is Verdict.PASS, result
    assert result.metrics["floor_gbps"] == 48 and result.metrics["link"] == "Gen5 x16"
    assert result.metrics["h2d_gbps"]["GPU 5"] == 52.77 and result.metrics["best_d2h_gbps"] == 52.78


def test_a_gpu_below_the_floor_is_named_with_its_address():
    (finding,) = criticals(run(SLOW))
    assert finding.subject == "GPU 5" and finding.action is Action.RESEAT
    assert "00000000:a8:00" in finding.message and "host-to-device" in finding.message
    assert "floor of 48 GB/s" in finding.message and "Gen5 x16 moves at most 63 GB/s" in finding.message


def test_a_gpu_well_below_its_siblings_fails_even_above_the_floor():
    # 45 vs 52.77: above a floor of 40, but 15% under the node's best; the fraction 0.9 catches it
    text = SLOW.replace("     26.39", "     45.00")
    lower = apply_overrides(PROFILE, ("floors.h2d_gbps=40",))
    assert run(text, lower).verdict is Verdict.PASS  # 45 >= 0.8 x 52.78
    strict = apply_overrides(lower, ("floors.copy_fraction_of_best=0.9",))
    (finding,) = criticals(run(text, strict))
    assert finding.subject == "GPU 5" and "below the node's best GPU (52.78 GB/s)" in finding.message


def test_a_real_node_with_a_lower_link_fails_every_gpu_against_the_h100_floor():
    result = run(load("nvbandwidth_v0_2_8x4090_h2d_d2h_ce_PARTIAL.txt"))
    assert result.verdict is Verdict.FAIL and len(criticals(result)) == 16  # 8 GPUs x 2 directions
    # judged against its own siblings only (no floor), the spread of healthy GPUs passes
    no_floor = apply_overrides(PROFILE, ("floors.h2d_gbps=null",))
    assert run(load("nvbandwidth_v0_2_8x4090_h2d_d2h_ce_PARTIAL.txt"), no_floor).verdict is Verdict.PASS


def test_fewer_gpus_than_the_profile_is_not_a_pass():
    one_gpu = (
        load("bandwidthTest_a100_sxm4_40gb_quick_pinned.txt").replace("12.3", "55.0").replace("13.2", "55.0")
    )
    result = run(one_gpu)
    assert result.verdict is Verdict.UNKNOWN and "GPU(s) 1, 2, 3, 4, 5, 6, 7" in result.reason
    single = apply_overrides(PROFILE, ("gpu.count=1",))
    assert run(one_gpu, single).verdict is Verdict.PASS


def test_bandwidth_test_all_devices_is_unknown_not_per_gpu():
    text = load("bandwidthTest_a100_sxm4_40gb_quick_pinned.txt").replace(
        " Device 0: NVIDIA A100-SXM4-40GB\n", " Device 0: A\n Device 1: B\n"
    )
    result = run(text.replace("1 Device(s)", "2 Device(s)"))
    assert result.verdict is Verdict.UNKNOWN and "--device=all sums the GPUs" in result.reason


def test_no_host_device_testcase_is_unknown():
    result = run(load("nvbandwidth_v0_8_8xh20_device_local_copy.txt"))
    assert result.verdict is Verdict.UNKNOWN and "no host<->device copy figure" in result.reason


def test_cut_short_output_is_unknown():
    result = run(HEALTHY[: HEALTHY.index("NOTE:")])
    assert result.verdict is Verdict.UNKNOWN and "cut short" in result.reason


def stress(gpus, error=None):
    doc = {"tool": "burnin-stress", "version": 1, "mode": "copy-bandwidth", "error": error, "gpus": gpus}
    return json.dumps(doc, indent=1) + "\n"


def test_burnin_stress_fallback_figures_are_judged_alike():
    gpus = [{"index": i, "h2d_gbps": 53.0, "d2h_gbps": 53.5} for i in range(8)]
    assert run(stress(gpus), rc=0).verdict is Verdict.PASS
    gpus[3] = {"index": 3, "error": "RuntimeError: CUDA error: unspecified launch failure"}
    result = run(stress(gpus), rc=0)
    (finding,) = criticals(result)
    assert finding.subject == "GPU 3" and finding.action is Action.RESET_GPU


def test_every_gpu_failing_its_copy_fails_the_node():
    gpus = [{"index": i, "error": "RuntimeError: CUDA error: unspecified launch failure"} for i in range(8)]
    result = run(stress(gpus), rc=0)
    assert result.verdict is Verdict.FAIL and len(criticals(result)) == 8


def test_burnin_stress_without_a_gpu_is_unknown():
    result = run(stress([], error="neither torch nor CuPy can run on a GPU here"), rc=2)
    assert result.verdict is Verdict.UNKNOWN and "neither torch nor CuPy" in result.reason


@pytest.mark.parametrize(
    "text", ["garbage\n", "nvbandwidth Version: v0.8\n", HEALTHY.replace("Running", "Runnin")]
)
def test_what_is_not_a_copy_measurement_is_unknown(text):
    assert run(text).verdict is Verdict.UNKNOWN

"""nccl_local: the single-node all-reduce over NVLink, judged on real and lab-derived nccl-tests
outputs; the GPU that drags it down is named when `nvidia-smi nvlink -s` shows it."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks.base import SECTION_MARK, CommandOutput, judge
from burnin.checks.nccl_local import NcclLocal
from burnin.result import Action, Severity, Verdict
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

CHECK = NcclLocal()
PROFILE = shipped()
LAB = REPO / "bringup" / "lab" / "standins" / "samples"


def lab(name: str) -> str:
    return (LAB / name).read_text().split("\n", 1)[1]


H100 = lab("nccl_tests_all_reduce_perf_g8_8xh100_nvlink_DERIVED.txt")
NVLINK_OK = lab("nvidia_smi_nvlink_s_8xh100_ok_DERIVED.txt")
NVLINK_GPU0 = lab("nvidia_smi_nvlink_s_8xh100_gpu0_degraded_DERIVED.txt")


def slow(text: str, factor: float = 0.55) -> str:
    """The largest rows' busbw scaled down (all the check reads of the bandwidth)."""
    out = []
    for line in text.splitlines(keepends=True):
        tokens = line.split()
        if len(tokens) == 13 and tokens[0].isdigit() and int(tokens[0]) >= 1 << 30:
            for i in (7, 11):
                line = line.replace(f" {tokens[i]} ", f" {float(tokens[i]) * factor:6.2f} ", 1)
        out.append(line)
    return "".join(out)


def node_output(nccl: str, nvlink: str | None = NVLINK_OK) -> str:
    text = f"{SECTION_MARK}nccl\n{nccl}"
    return text + (f"{SECTION_MARK}nvlink\n{nvlink}" if nvlink is not None else "")


def run(text: str, profile=PROFILE, rc: int = 0):
    return judge(CHECK, CommandOutput(stdout=text, rc=rc), profile)


def criticals(result):
    return [f for f in result.findings if f.severity is Severity.CRITICAL]


def test_command_sweeps_to_8g_on_every_gpu_then_reads_nvlink():
    script = CHECK.command(PROFILE)
    assert "all_reduce_perf -b 8 -e 8G -f 2 -g 8" in script and "nvidia-smi nvlink -s" in script
    assert script.rstrip().endswith("exit $rc") and CHECK.stage == "gpu"
    no_nvlink = apply_overrides(PROFILE, ("gpu.nvlink_links_per_gpu=0",))
    assert "nvlink" not in CHECK.command(no_nvlink).replace("nccl", "")


def test_healthy_h100_node_passes_at_the_single_node_floor():
    result = run(node_output(H100))
    assert result.verdict is Verdict.PASS, result
    assert result.metrics["busbw_gbps"] > 460 == result.metrics["floor_gbps"] and result.metrics["gpus"] == 8
    assert result.metrics["wrong"] == 0


def test_slow_allreduce_fails_and_names_the_gpu_whose_nvlinks_are_degraded():
    result = run(node_output(slow(H100), NVLINK_GPU0))
    assert result.verdict is Verdict.FAIL
    busbw, culprit = criticals(result)
    assert "below the floor 460 GB/s: a bad NVLink, NVSwitch or GPU in this node" in busbw.message
    assert culprit.subject == "GPU 0" and culprit.action is Action.RMA
    assert "drags the all-reduce down" in culprit.message and "Link 2" in culprit.evidence


def test_slow_allreduce_with_every_link_up_says_the_per_gpu_view_cannot_tell():
    result = run(node_output(slow(H100), NVLINK_OK))
    (busbw,) = criticals(result)
    assert busbw.action is Action.RESEAT and result.verdict is Verdict.FAIL
    assert any("cannot tell which GPU or NVSwitch" in f.message for f in result.findings)


def test_a_pasted_log_without_sections_is_judged_too():
    assert run(H100).verdict is Verdict.PASS
    assert run(slow(H100)).verdict is Verdict.FAIL


def test_real_8xa100_node_is_below_the_h100_floor():
    result = run(load("nccl_tests_all_reduce_perf_8xa100_ok.txt"))
    assert result.verdict is Verdict.FAIL and 234 < result.metrics["busbw_gbps"] < 236


def test_wrong_elements_fail_as_corruption():
    lines = H100.splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if line.split()[:1] == ["1048576"])
    lines[i] = lines[i][: lines[i].rindex("0")] + "3\n"
    result = run("".join(lines), rc=1)
    assert result.verdict is Verdict.FAIL
    assert any(f.action is Action.RMA and "#wrong" in f.message for f in criticals(result))


def one_gpu(text: str) -> str:
    """The recording as `-g 1` prints it: one rank line, busbw 0.00 (nccl-tests' factor 2(n-1)/n)."""
    out = []
    for line in text.splitlines(keepends=True):
        tokens = line.split()
        if line.startswith("#  Rank") and not line.startswith("#  Rank  0 "):
            continue
        if len(tokens) == 13 and tokens[0].isdigit():
            line = "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}".format(*tokens[:5])
            for t, alg, wrong in ((tokens[5], tokens[6], tokens[8]), (tokens[9], tokens[10], tokens[12])):
                line += f"  {t:>7}  {alg:>6}  {0.0:6.2f}  {wrong:>5}"
            line += "\n"
        out.append(line.replace("nGpus 8", "nGpus 1"))
    return "".join(out)


def test_one_gpu_profile_runs_it_trivially_and_says_so():
    single = apply_overrides(PROFILE, ("gpu.count=1",))
    assert "-g 1" in CHECK.command(single)
    result = run(node_output(one_gpu(H100)), single)
    assert result.verdict is Verdict.PASS and result.metrics["floor_gbps"] is None
    assert result.metrics["busbw_gbps"] == 0 and result.metrics["gpus"] == 1
    assert any("1 GPU: an all-reduce of one rank moves nothing" in f.message for f in result.findings)


def test_runs_that_are_not_this_nodes_gpus_are_not_passed():
    two_nodes = run(load("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt"))
    assert two_nodes.verdict is Verdict.UNKNOWN and "not one node's all-reduce" in two_nodes.reason
    seven = "".join(line for line in H100.splitlines(True) if not line.startswith("#  Rank  7 "))
    result = run(slow(seven))  # slow, but not this node's 8 GPUs: not held to its floor, not passed
    assert result.verdict is Verdict.UNKNOWN and "ran on 7 GPU(s), the profile has 8" in result.reason
    assert result.metrics["floor_gbps"] is None


def test_other_collectives_and_cut_outputs_are_unknown():
    assert run(load("nccl_tests_all_gather_perf_8gpu_ok.txt")).verdict is Verdict.UNKNOWN
    assert run(load("nccl_tests_alltoall_perf_8gpu_ok.txt")).verdict is Verdict.UNKNOWN
    cut = H100[: H100.index("# Out of bounds")]
    assert run(cut).verdict is Verdict.UNKNOWN
    before_closing = H100[: H100.rindex("#\n")]
    result = run(before_closing)
    assert result.verdict is Verdict.UNKNOWN and "closing '#'" in result.reason


def test_fabric_manager_down_is_a_configuration_failure():
    result = run(load("nccl_tests_all_reduce_8xh100_cuda_system_not_initialized.txt"), rc=1)
    assert result.verdict is Verdict.FAIL and criticals(result)[0].action is Action.RECONFIGURE

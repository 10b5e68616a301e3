"""gpu_nic_affinity: `nvidia-smi topo -m` against the profile's GPU-to-NIC pairs. A NIC in the
wrong slot and a GPU whose nearest NIC is across the CPU link are named; pairs at PIX or PXB
pass; a GPU the matrix lacks is UNKNOWN, never PASS. Real outputs from the corpus (index.tsv)."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.checks.pcie_topo import judge_affinity
from burnin.parsers.nvidia_smi import parse_topology
from burnin.result import Action, Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

DELLA = "nvidia_smi_topo_m_8xh100_6nic.txt"  # 8x H100, 6 NICs, NIC Legend
H20 = "nvidia_smi_topo_m_8xh20_5nic_two_gpus_per_nic_PARTIAL.txt"  # NIC0-4, no legend
OLD = "nvidia_smi_topo_m_16gpu_mlx5_columns_PARTIAL.txt"  # mlx5_N columns
CHECK = ALL_CHECKS["gpu_nic_affinity"]


def profile(pairs: str | None):
    base = shipped()
    return apply_overrides(base, [f"pcie.gpu_nics={pairs}"]) if pairs else base


def run(sample: str, pairs: str | None):
    return judge(CHECK, CommandOutput(stdout=load(sample), rc=0), profile(pairs))


def test_it_declares_its_stage_input_and_field_and_runs_only_where_pairs_are_named():
    assert (CHECK.stages, CHECK.reads, CHECK.judges) == (
        ("pcie",),
        ("nvidia-smi topo -m",),
        ("pcie.gpu_nics",),
    )
    assert not CHECK.applies(profile(None))
    assert CHECK.applies(profile("[mlx5_0]")) and CHECK.command(profile("[mlx5_0]")) == "nvidia-smi topo -m"
    assert run(DELLA, None).verdict is Verdict.UNKNOWN


def test_the_nodes_own_pairs_pass_and_unpaired_gpus_are_not_judged():
    res = run(DELLA, "[mlx5_0, -, -, mlx5_2, mlx5_3, -, mlx5_5, -]")
    assert res.verdict is Verdict.PASS, res.findings
    assert res.metrics["pairs"]["GPU3"] == {"nic": "mlx5_2", "link": "PIX"}
    assert "GPU1" not in res.metrics["pairs"]


def test_a_nic_in_the_wrong_slot_is_named_with_the_nic_that_is_there():
    res = run(DELLA, "[mlx5_0, -, -, mlx5_3]")
    assert res.verdict is Verdict.FAIL
    (finding,) = [f for f in res.findings if f.severity is Severity.CRITICAL]
    assert res.findings[-1].message == "GPU4, GPU5, GPU6, GPU7 not in the profile's pcie.gpu_nics: not judged"
    assert finding.message == (
        "GPU3: its NIC mlx5_3 is at NODE, not behind its PCIe switch; mlx5_2 (PIX) is: "
        "a NIC in the wrong slot (or cabled to the wrong rail)"
    )
    assert finding.action is Action.RESEAT and finding.subject == "GPU3 / mlx5_3"


def test_a_gpu_whose_nearest_nic_is_across_the_cpu_link_is_named():
    res = run(H20, "[NIC0, NIC0, NIC1, NIC1, NIC2, NIC2, NIC4]")
    assert res.verdict is Verdict.FAIL
    assert [f.subject for f in res.findings] == ["GPU1 / NIC0", "GPU3 / NIC1", "GPU5 / NIC2"]
    assert (
        "GPU1: its NIC NIC0 is at NODE: no NIC behind its PCIe switch, so GPUDirect RDMA crosses the CPU link"
        in (res.findings[0].message)
    )


def test_sys_is_across_the_cpu_link_too_and_pxb_passes():
    topo = parse_topology(load(OLD))
    findings, metrics, missing = judge_affinity(topo, ("mlx5_1", "mlx5_4", "mlx5_0"))
    assert [f.subject for f in findings if f.severity is Severity.CRITICAL] == [
        "GPU1 / mlx5_4"
    ] and not missing
    assert "is at SYS, not behind its PCIe switch; mlx5_0 (PIX), mlx5_1 (PXB) is" in findings[0].message
    assert metrics["pairs"]["GPU0"] == {"nic": "mlx5_1", "link": "PXB"}  # PXB: behind the same switch
    assert run(OLD, "[mlx5_0, mlx5_0, mlx5_1, mlx5_1]").verdict is Verdict.PASS


def test_a_nic_not_in_the_matrix_is_named_and_a_gpu_not_in_it_is_unknown():
    res = run(DELLA, "[mlx5_7]")
    assert res.verdict is Verdict.FAIL
    assert (
        res.findings[0].message
        == "GPU0: its NIC mlx5_7 is not in the matrix; mlx5_0 (PIX), mlx5_1 (PIX) beside it"
    )
    partial = run(OLD, "[mlx5_0, mlx5_0, mlx5_1, mlx5_1, mlx5_2]")  # the excerpt stops at GPU3
    assert partial.verdict is Verdict.UNKNOWN and partial.reason == "GPU4 is not in the matrix"


def test_nics_numbered_without_their_legend_are_unknown_not_missing():
    """A cut output loses the NIC Legend at its end: NIC0..NICn then name no mlx5_N, and the
    profile's NIC is not 'missing' (found by tests/unit/burnin/checks/test_base_truncation.py)."""
    text = load(DELLA)
    cut = text[: text.index("NIC Legend")]
    res = judge(CHECK, CommandOutput(stdout=cut, rc=0), profile("[mlx5_0, -, -, mlx5_2]"))
    assert res.verdict is Verdict.UNKNOWN
    assert res.reason.startswith(
        "GPU0: mlx5_0 cannot be found: NIC0, NIC1, NIC2, NIC3, NIC4, NIC5 without the NIC Legend"
    )
    assert run(H20, "[NIC0]").verdict is Verdict.PASS  # named by the label itself: found


def test_a_row_the_paste_damaged_is_unknown_not_a_nic_in_the_wrong_slot():
    """A real 8x B200 matrix whose paste ran cells together ('PXBNODE', 'SYSSYS'): the shifted
    rows once read the CPU affinity as GPU7's link and blamed five GPUs' NICs (RESEAT). The
    intact pairs pass; the damaged ones cannot be read: UNKNOWN, no hardware blamed."""
    pairs = "[mlx5_4, mlx5_7, mlx5_8, mlx5_9, mlx5_10, mlx5_13, mlx5_14, mlx5_15]"
    result = run("nvidia_smi_topo_m_8xb200_16nic_paste_damaged_PARTIAL.txt", pairs)
    assert result.verdict is Verdict.UNKNOWN, result.to_dict()
    assert not [f for f in result.findings if f.severity is Severity.CRITICAL]
    assert "GPU2" in result.to_dict()["reason"] and "GPU7" in result.to_dict()["reason"]

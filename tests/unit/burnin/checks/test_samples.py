"""Every check judges real tool outputs (tests/fixtures/samples, the lab's recordings) as
samples/INDEX.md says it should: the verdict, and the action of each critical finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from tests.paths import REPO

SHARED = REPO / "tests" / "fixtures" / "samples"
LAB = REPO / "bringup" / "lab" / "standins" / "samples"
PROFILE, _ = load_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")

# (file, check, profile overrides, verdict, actions of the critical findings)
CASES = [
    (SHARED / "nvidia_smi_q_8xh100_535_183.txt", "gpu_inventory", (), "PASS", set()),
    (SHARED / "nvidia_smi_q_8xh100_535_183.txt", "gpu_ecc", (), "PASS", set()),
    (SHARED / "nvidia_smi_q_8xh100_535_183.txt", "gpu_memory", (), "PASS", set()),
    (SHARED / "nvidia_smi_q_8xh100_535_183.txt", "gpu_versions", (), "PASS", set()),
    (SHARED / "nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt", "gpu_versions", (), "FAIL", {"RECONFIGURE"}),
    (SHARED / "nvidia_smi_q_a10_remapped_rows_pending.txt", "gpu_memory", (), "FAIL", {"RESET_GPU"}),
    (SHARED / "nvidia_smi_q_a10_remapped_rows_pending.txt", "gpu_inventory", (), "FAIL", {"RESEAT", "RMA"}),
    (SHARED / "nvidia_smi_q_titanv_remap_na.txt", "gpu_memory", (), "PASS", set()),  # N/A is not a failure
    (SHARED / "nvidia_smi_q_d_page_retirement_8gpu_clean.txt", "gpu_memory", (), "PASS", set()),
    (
        SHARED / "nvidia_smi_q_d_page_retirement_8gpu_bad_SYNTHETIC.txt",
        "gpu_memory",
        (),
        "FAIL",
        {"REBOOT", "RMA"},
    ),
    (SHARED / "nvidia_smi_nvlink_s_8xa100_ok.txt", "nvlink", ("gpu.nvlink_links_per_gpu=12",), "PASS", set()),
    (SHARED / "nvidia_smi_nvlink_s_8xa100_ok.txt", "nvlink", (), "FAIL", {"RMA"}),  # 12 links, not 18
    (SHARED / "nvidia_smi_nvlink_s_h200_degraded_links.txt", "nvlink", (), "FAIL", {"RMA"}),
    (SHARED / "nvidia_smi_nvlink_s_all_links_inactive.txt", "nvlink", (), "FAIL", {"REBOOT"}),
    (SHARED / "dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt", "kernel_log", (), "PASS", set()),
    (SHARED / "dmesg_xid79_fallen_off_bus_crashdump.txt", "kernel_log", (), "FAIL", {"REBOOT"}),
    (SHARED / "dmesg_gpu_fallen_off_bus_at_probe_no_xid.txt", "kernel_log", (), "FAIL", {"REBOOT"}),
    (
        SHARED / "dmesg_aer_surprise_down_then_xid79_fallen_off_bus.txt",
        "kernel_log",
        (),
        "FAIL",
        {"REBOOT", "RESEAT"},
    ),
    (
        SHARED / "dmesg_aer_uncorrected_fatal_cmpltto_recovery_failed.txt",
        "kernel_log",
        (),
        "FAIL",
        {"RESEAT"},
    ),
    (SHARED / "dmesg_xid48_63_94_dbe_row_remap_h100.txt", "kernel_log", (), "FAIL", {"RESET_GPU"}),
    (SHARED / "dmesg_xid119_gsp_rpc_timeout_h100.txt", "kernel_log", (), "FAIL", {"RESET_GPU"}),
    (
        SHARED / "dmesg_imbue_doctest_lines_xid94_xid64_sxid_pcie_limited.txt",
        "kernel_log",
        (),
        "FAIL",
        {"RMA"},
    ),
    (SHARED / "dmesg_xid13_43_app_fault_excerpt.txt", "kernel_log", (), "WARN", set()),  # application faults
    (SHARED / "dmesg_xid45_caused_by_previous_xid145_149.txt", "kernel_log", (), "WARN", set()),
    (SHARED / "dmesg_sxid_22013_nonfatal_nvswitch_h100.txt", "kernel_log", (), "PASS", set()),  # benign SXid
    (SHARED / "dmesg_mlx5_ib_link_flap_and_module_events.txt", "kernel_log", (), "FAIL", {"REPLACE_CABLE"}),
    (
        SHARED / "dmesg_pcie_bandwidth_limited_by_x4_x8.txt",
        "kernel_log",
        (),
        "PASS",
        set(),
    ),  # the pcie stage's
    (SHARED / "ibstat_h100_down_polling.txt", "ib_ports", (), "FAIL", {"RESEAT"}),
    (
        SHARED / "ibstat_a100_hdr_ibpanic_exit255.txt",
        "ib_ports",
        ("ib.rate_gbps=200",),
        "FAIL",
        {"RECONFIGURE"},
    ),
    (
        SHARED / "dcgmi_diag_r3_8xh100_dcgm338_gpu_memory_fail_cuda_init.txt",
        "dcgm_diag",
        (),
        "FAIL",
        {"RECONFIGURE"},
    ),
    (SHARED / "dcgmi_diag_r4_dcgm3_persistence_mode_fail.txt", "dcgm_diag", (), "FAIL", {"RECONFIGURE"}),
    (SHARED / "dcgmi_diag_r3_dcgm4_format_pass_doc_example.txt", "dcgm_diag", (), "PASS", set()),
    (SHARED / "dcgmi_diag_r2_pcie_fail_nvlink_down_partial.txt", "dcgm_diag", (), "FAIL", {"REBOOT"}),
    (
        SHARED / "dcgmi_diag_r3_j_dcgm3_all_skip_PARTIAL.json",
        "dcgm_diag",
        (),
        "UNKNOWN",
        set(),
    ),  # not valid JSON
    (LAB / "dcgmi_diag_r3_j_8xh100_dcgm338_pass_DERIVED.json", "dcgm_diag", (), "PASS", set()),
    (LAB / "dcgmi_diag_r3_j_8xh100_dcgm338_gpu2_memory_fail_DERIVED.json", "dcgm_diag", (), "FAIL", {"RMA"}),
    (LAB / "ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt", "ib_ports", (), "PASS", set()),
    (
        LAB / "ibstat_8xh100_cx7_ndr_ib_mlx5_6_down_polling_DERIVED.txt",
        "ib_ports",
        (),
        "FAIL",
        {"REPLACE_CABLE"},
    ),
    (LAB / "nvidia_smi_q_8xh100_535_183_gpu4_missing_DERIVED.txt", "gpu_inventory", (), "FAIL", {"RESEAT"}),
    (
        LAB / "nvidia_smi_q_8xh100_535_183_gpu1_ecc_disabled_DERIVED.txt",
        "gpu_ecc",
        (),
        "FAIL",
        {"RECONFIGURE"},
    ),
    (LAB / "df_pk_8xh100_node_SYNTHETIC.txt", "disk_usage", (), "PASS", set()),
    (LAB / "df_pk_8xh100_node_root_full_SYNTHETIC.txt", "disk_usage", (), "FAIL", {"RECONFIGURE"}),
    (LAB / "ofed_info_s_doca_ofed_24_04_0_6_6_SYNTHETIC.txt", "ofed_version", (), "PASS", set()),
    (
        LAB / "ofed_info_s_doca_ofed_24_04_0_6_6_SYNTHETIC.txt",
        "ofed_version",
        ("pins.doca_ofed=24.10-1.1.4",),
        "FAIL",
        {"RECONFIGURE"},
    ),
    (LAB / "systemctl_is_active_inactive_SYNTHETIC.txt", "fabric_manager", (), "FAIL", {"RECONFIGURE"}),
    (LAB / "nvidia_smi_L_8xh100_DERIVED.txt", "container_gpu", (), "PASS", set()),
    # host stage: this dev VM's figures, judged against themselves and the H100 floors
    (
        SHARED / "sysbench_memory_read_local_64m_2threads_kvm.txt",
        "memory_bandwidth",
        ("host_perf.memory_bandwidth_gbps=30",),
        "PASS",
        set(),
    ),
    (SHARED / "sysbench_memory_read_local_64m_2threads_kvm.txt", "memory_bandwidth", (), "FAIL", {"RESEAT"}),
    (
        SHARED / "fio_json_seqwrite_seqread_randread_ext4_libaio.json",
        "nvme_perf",
        (
            "host_perf.nvme_seq_read_mbps=1000",
            "host_perf.nvme_randread_iops=100000",
            "host_perf.nvme_randread_p99_us=5000",
        ),
        "PASS",
        set(),
    ),
    (SHARED / "fio_json_seqwrite_seqread_randread_ext4_libaio.json", "nvme_perf", (), "FAIL", {"RESEAT"}),
    (SHARED / "cpu_throttle_2x8480c_no_events_SYNTHETIC.txt", "cpu_throttle", (), "PASS", set()),
    (SHARED / "cpu_throttle_2x8480c_socket1_throttled_SYNTHETIC.txt", "cpu_throttle", (), "FAIL", {"RESEAT"}),
    (SHARED / "cpu_throttle_kvm_no_counters.txt", "cpu_throttle", (), "UNKNOWN", set()),
    (LAB / "sysbench_memory_read_224threads_2x8480c_DERIVED.txt", "memory_bandwidth", (), "PASS", set()),
    (
        LAB / "sysbench_memory_read_224threads_2x8480c_half_bw_DERIVED.txt",
        "memory_bandwidth",
        (),
        "FAIL",
        {"RESEAT"},
    ),
    (LAB / "fio_json_nvme_perf_raid0_8x_u2_DERIVED.json", "nvme_perf", (), "PASS", set()),
    (LAB / "fio_json_nvme_perf_raid0_slow_drive_DERIVED.json", "nvme_perf", (), "FAIL", {"RESEAT"}),
    (
        LAB / "smartctl_j_a_nvme3_critical_warning_reliability_DERIVED.json",
        "nvme_health",
        (),
        "FAIL",
        {"RMA"},
    ),
    (LAB / "nvidia_smi_q_8xh100_535_183_gpu3_vbios_old_DERIVED.txt", "gpu_versions", (), "WARN", set()),
]


def tool_output(path: Path) -> str:
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    assert first.startswith("# SOURCE:")
    return rest


@pytest.mark.parametrize(
    ("path", "check", "overrides", "verdict", "actions"),
    CASES,
    ids=[f"{c[1]}-{c[0].stem}-{i}" for i, c in enumerate(CASES)],
)
def test_sample_verdicts(path, check, overrides, verdict, actions) -> None:
    profile = apply_overrides(PROFILE, overrides)
    result = judge(ALL_CHECKS[check], CommandOutput(stdout=tool_output(path), rc=0), profile)
    assert result.verdict.value == verdict, result.to_dict()
    critical = {f.action.value for f in result.findings if f.severity.value == "critical"}
    assert critical == actions, result.to_dict()


def test_every_finding_names_evidence_or_subject() -> None:
    for path, check, overrides, verdict, _ in CASES:
        if verdict != "FAIL":
            continue
        result = judge(
            ALL_CHECKS[check], CommandOutput(stdout=tool_output(path)), apply_overrides(PROFILE, overrides)
        )
        for f in result.findings:
            assert f.message and (f.evidence or f.subject), (check, path.name, f)


@pytest.mark.parametrize(
    ("path", "check", "overrides", "verdict", "actions"),
    CASES,
    ids=[f"cli-{c[1]}-{c[0].stem}-{i}" for i, c in enumerate(CASES)],
)
def test_burnin_evaluate_prints_the_verdict(tmp_path, path, check, overrides, verdict, actions) -> None:
    """The same judgement through the command an operator runs on a saved output."""
    import json

    from click.testing import CliRunner

    from burnin.cli import main

    saved = tmp_path / "output.txt"
    saved.write_text(tool_output(path), encoding="utf-8")
    sets = [arg for item in overrides for arg in ("--set", item)]
    args = [
        "--inventory-dir",
        str(REPO / "inventories"),
        "evaluate",
        "--check",
        check,
        "--profile",
        "h100-sxm-8x400g",
        *sets,
        "--json",
        str(saved),
    ]
    res = CliRunner().invoke(main, args)
    assert json.loads(res.stdout)["verdict"] == verdict, res.output
    assert res.exit_code == (0 if verdict in ("PASS", "WARN") else 1)
    text = CliRunner().invoke(main, args[:-2] + [str(saved)])
    assert f"{check}: {verdict}" in text.stdout

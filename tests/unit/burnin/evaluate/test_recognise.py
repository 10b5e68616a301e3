"""`burnin evaluate` recognises every tool's output.

Every sample in tests/fixtures/samples is recognised as its tool and judged as INDEX.md says;
the table below is the expectation for each, and INDEX.md is read so that a sample added
without an entry fails here. Garbage, empty, binary and truncated inputs of every tool give
UNKNOWN (or a clear refusal) and never a traceback.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bringup.core.errors import BadInput
from bringup.profiles.load import apply_overrides
from burnin.evaluate.handed_in import evaluate_evidence, evaluate_text, read_evidence
from burnin.evaluate.recognise import TOOLS, find_tool, recognise
from burnin.result import Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import SAMPLES_DIR

PROFILE = shipped()

# sample -> (the tool recognised, the verdict against the shipped H100 profile with these
# overrides). Overrides stand for the hardware the capture came from where INDEX.md judges it
# against that (an 8x A100 node, an HDR link, a Gen4 x8 consumer card); without them the
# H100/NDR profile fails it, rightly. None: recognised as no tool (a reference table, source code).
EXPECT: dict[str, tuple[str | None, str, tuple[str, ...]]] = {
    "bandwidthTest_a100_sxm4_40gb_quick_pinned.txt": (
        "nvbandwidth / bandwidthTest",
        "FAIL",
        ("gpu.count=1",),
    ),
    "dcgm_error_codes_severity_table.tsv": (None, "UNKNOWN", ()),
    "dcgmi_diag_json_dcgm3_per_gpu_nvidia_example.json": ("dcgmi diag", "FAIL", ()),
    "dcgmi_diag_json_dcgm4_schema.json": ("dcgmi diag", "UNKNOWN", ()),
    "dcgmi_diag_r2_pcie_fail_nvlink_down_partial.txt": ("dcgmi diag", "FAIL", ()),
    "dcgmi_diag_r3_8xh100_dcgm338_gpu_memory_fail_cuda_init.txt": ("dcgmi diag", "FAIL", ()),
    "dcgmi_diag_r3_dcgm4_format_pass_doc_example.txt": ("dcgmi diag", "PASS", ()),
    "dcgmi_diag_r3_j_dcgm3_all_skip_PARTIAL.json": ("dcgmi diag", "UNKNOWN", ()),
    "dcgmi_diag_r4_dcgm3_persistence_mode_fail.txt": ("dcgmi diag", "FAIL", ()),
    "dmesg_aer_surprise_down_then_xid79_fallen_off_bus.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_aer_uncorrected_fatal_cmpltto_recovery_failed.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt": ("dmesg / journalctl -k", "PASS", ()),
    "dmesg_gpu_fallen_off_bus_at_probe_no_xid.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_imbue_doctest_lines_xid94_xid64_sxid_pcie_limited.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_mlx5_ib_link_flap_and_module_events.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_pcie_bandwidth_limited_by_x4_x8.txt": ("dmesg / journalctl -k", "PASS", ()),
    "dmesg_sxid_22013_nonfatal_nvswitch_h100.txt": ("dmesg / journalctl -k", "PASS", ()),
    "dmesg_xid119_gsp_rpc_timeout_h100.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_xid13_43_app_fault_excerpt.txt": ("dmesg / journalctl -k", "WARN", ()),
    "dmesg_xid45_caused_by_previous_xid145_149.txt": ("dmesg / journalctl -k", "WARN", ()),
    "dmesg_xid48_63_94_dbe_row_remap_h100.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "dmesg_xid79_fallen_off_bus_crashdump.txt": ("dmesg / journalctl -k", "FAIL", ()),
    "gpu_burn_16gpu_faulty_warning_exit0.txt": ("gpu-burn", "FAIL", ()),
    "gpu_burn_8gpu_died_no_clients_alive.txt": ("gpu-burn", "FAIL", ()),
    "gpu_burn_8xa100_ok.txt": ("gpu-burn", "PASS", ()),
    "gpu_burn_8xv100_init_error_but_reports_ok_partial.txt": ("gpu-burn", "FAIL", ()),
    "ib_write_bw_bidirectional_ngc_multinode_partial.txt": (
        "ib_write_bw / ib_read_bw (perftest)",
        "UNKNOWN",
        (),
    ),
    "ib_write_bw_hdr_a_report_gbits_client_partial.txt": (
        "ib_write_bw / ib_read_bw (perftest)",
        "UNKNOWN",
        (),
    ),
    "ib_write_bw_loopback_8M_superbench.txt": (
        "ib_write_bw / ib_read_bw (perftest)",
        "PASS",
        ("ib.rate_gbps=200",),
    ),
    "ib_write_bw_loopback_all_sizes_superbench.txt": (
        "ib_write_bw / ib_read_bw (perftest)",
        "PASS",
        ("ib.rate_gbps=200",),
    ),
    "ib_write_bw_server_roce_waiting_partial.txt": ("ib_write_bw / ib_read_bw (perftest)", "UNKNOWN", ()),
    "ibnetdiscover_p_edr.txt": ("ibnetdiscover -p", "UNKNOWN", ()),
    # host hardware: a QEMU guest's or this dev VM's figures stand in for the profile's
    "dmidecode_t_memory_qemu_1dimm.txt": (
        "dmidecode -t memory",
        "PASS",
        ("hardware.dimm_count=1", "hardware.dimm_size_gib=1"),
    ),
    "dmidecode_t_memory_4slots_1empty_SYNTHETIC.txt": (
        "dmidecode -t memory",
        "FAIL",
        ("hardware.dimm_count=4",),
    ),
    "lscpu_amd_epyc_kvm_2cpu.txt": ("lscpu", "PASS", ("hardware.cpu_model=EPYC", "hardware.cpu_cores=2")),
    "lscpu_J_amd_epyc_kvm_2cpu.json": ("lscpu", "PASS", ("hardware.cpu_model=EPYC", "hardware.cpu_cores=2")),
    "smartctl_j_a_qemu_nvme_ok.json": ("smartctl -j", "UNKNOWN", ()),
    "smartctl_j_a_nvme_spare_below_threshold_SYNTHETIC.json": ("smartctl -j", "FAIL", ()),
    "nvme_smart_log_json_qemu_nvme.json": ("nvme smart-log -o json", "UNKNOWN", ()),
    "fio_json_randrw_4k_tmpfs_psync.json": ("fio --output-format=json", "UNKNOWN", ()),
    # host performance: this dev VM's figures, or its own figures set as the floors
    "sysbench_memory_read_local_64m_2threads_kvm.txt": ("sysbench memory", "FAIL", ()),
    "sysbench_memory_fatal_bad_option.txt": ("sysbench memory", "UNKNOWN", ()),
    "fio_json_seqwrite_seqread_randread_ext4_libaio.json": (
        "fio --output-format=json",
        "PASS",
        (
            "host_perf.nvme_seq_read_mbps=1000",
            "host_perf.nvme_randread_iops=100000",
            "host_perf.nvme_randread_p99_us=5000",
        ),
    ),
    "stress_ng_cpu_matrixprod_metrics_brief_kvm_2cpu.txt": ("stress-ng --metrics-brief", "UNKNOWN", ()),
    "cpu_throttle_kvm_no_counters.txt": ("cpu_throttle (thermal counters + stress-ng)", "UNKNOWN", ()),
    "cpu_throttle_2x8480c_no_events_SYNTHETIC.txt": (
        "cpu_throttle (thermal counters + stress-ng)",
        "PASS",
        (),
    ),
    "cpu_throttle_2x8480c_socket1_throttled_SYNTHETIC.txt": (
        "cpu_throttle (thermal counters + stress-ng)",
        "FAIL",
        (),
    ),
    "ibstat_a100_hdr_ibpanic_exit255.txt": ("ibstat", "FAIL", ("ib.rate_gbps=200",)),
    "ibstat_h100_down_polling.txt": ("ibstat", "FAIL", ()),
    "ibstat_h100_ethernet_ports_disabled.txt": ("ibstat", "PASS", ()),
    "ibstat_h100_ndr_all_active.txt": ("ibstat", "FAIL", ()),
    "ibstat_h100_some_down_disabled.txt": ("ibstat", "FAIL", ()),
    "ibstatus_a100_hdr_ok.txt": ("ibstatus", "UNKNOWN", ()),
    "ibstatus_port_down_polling_qdr_partial.txt": ("ibstatus", "UNKNOWN", ()),
    "ibv_devinfo_and_ibstat_cx6_hdr100.txt": ("ibstat", "FAIL", ()),
    "lspci_gpu_lnksta_downgraded_2_5gt_x8_with_nvsmi.txt": ("lspci -vv", "FAIL", ()),
    "lspci_vv_cx7_downtrained_16gt_x8.txt": ("lspci -vv", "FAIL", ()),
    "lspci_vv_cx7_gen5_x16_ok.txt": ("lspci -vv", "PASS", ()),
    "lspci_vv_h100_gpu_gen5_x16_ok.txt": ("lspci -vv", "PASS", ()),
    "lspci_vv_pcie_switch_port_speed_downgraded_benign.txt": ("lspci -vv", "UNKNOWN", ()),
    "nccl_tests_all_gather_out_of_bounds_FAILED_old_format.txt": ("nccl-tests", "FAIL", ()),
    "nccl_tests_all_gather_perf_8gpu_ok.txt": (
        "nccl-tests",
        "PASS",
        ("floors.nccl_busbw_single_node_gbps=200",),
    ),
    "nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt": ("nccl-tests", "FAIL", ()),
    "nccl_tests_all_reduce_8xh100_cuda_system_not_initialized.txt": ("nccl-tests", "FAIL", ()),
    "nccl_tests_all_reduce_perf_8xa100_ok.txt": (
        "nccl-tests",
        "PASS",
        ("floors.nccl_busbw_single_node_gbps=228",),
    ),
    "nccl_tests_alltoall_perf_8gpu_ok.txt": (
        "nccl-tests",
        "PASS",
        ("floors.nccl_busbw_single_node_gbps=200",),
    ),
    "nccl_tests_message_formats_from_source.txt": (None, "UNKNOWN", ()),
    "nccl_tests_test_nccl_failure_unhandled_cuda_error_with_warn.txt": ("nccl-tests", "FAIL", ()),
    "nvbandwidth_v0_2_8x4090_h2d_d2h_ce_PARTIAL.txt": (
        "nvbandwidth / bandwidthTest",
        "PASS",
        ("floors.h2d_gbps=null",),
    ),
    "nvbandwidth_v0_8_8xh20_device_local_copy.txt": ("nvbandwidth / bandwidthTest", "UNKNOWN", ()),
    "nvbandwidth_v0_8_a100_h2d_sm_1gpu.txt": ("nvbandwidth / bandwidthTest", "FAIL", ("gpu.count=1",)),
    "nvidia_smi_L_4xh100_with_mig.txt": ("nvidia-smi -L", "FAIL", ()),
    "nvidia_smi_nvlink_s_8xa100_ok.txt": ("nvidia-smi nvlink -s", "PASS", ("gpu.nvlink_links_per_gpu=12",)),
    "nvidia_smi_nvlink_s_all_links_inactive.txt": ("nvidia-smi nvlink -s", "FAIL", ()),
    "nvidia_smi_nvlink_s_h200_degraded_links.txt": ("nvidia-smi nvlink -s", "FAIL", ()),
    "nvidia_smi_q_8xh100_535_183.txt": ("nvidia-smi -q", "PASS", ()),
    "nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt": ("nvidia-smi -q", "FAIL", ()),
    "nvidia_smi_q_a10_remapped_rows_pending.txt": ("nvidia-smi -q", "FAIL", ()),
    "nvidia_smi_q_d_page_retirement_8gpu_bad_SYNTHETIC.txt": ("nvidia-smi -q -d", "FAIL", ()),
    "nvidia_smi_q_d_page_retirement_8gpu_clean.txt": ("nvidia-smi -q -d", "PASS", ()),
    "nvidia_smi_q_titanv_remap_na.txt": ("nvidia-smi -q", "FAIL", ()),
    "nvidia_smi_query_gpu_pcie_link_csv_8xl40s_idle_gen1.txt": (
        "nvidia-smi --query-gpu CSV",
        "PASS",
        ("pcie.gpu.gen=4",),
    ),
    "nvidia_smi_query_gpu_pcie_link_csv_idle_vs_load.txt": (
        "nvidia-smi --query-gpu CSV",
        "PASS",
        ("pcie.gpu.gen=4", "pcie.gpu.width=8"),
    ),
    "nvidia_smi_table_550.txt": ("nvidia-smi (default table)", "UNKNOWN", ()),
    "nvidia_smi_table_8xh100_persistence_off.txt": ("nvidia-smi (default table)", "UNKNOWN", ()),
    "nvidia_smi_topo_m_8xh100_6nic.txt": ("nvidia-smi topo -m", "UNKNOWN", ()),
    "perfquery_rcv_error_details.txt": ("perfquery", "PASS", ()),
    "perfquery_x_clean_2ports.txt": ("perfquery", "PASS", ()),
    "perfquery_x_errors_switch.txt": ("perfquery", "WARN", ()),
    "perftest_error_unable_to_create_qp.txt": ("ib_write_bw / ib_read_bw (perftest)", "UNKNOWN", ()),
    "perftest_message_formats_from_source.txt": ("ib_write_bw / ib_read_bw (perftest)", "UNKNOWN", ()),
    "perftest_ndr_cx7_client_send_read_write_bw.txt": ("ib_write_bw / ib_read_bw (perftest)", "WARN", ()),
    "sysfs_class_infiniband_h100_mlx5_0_1_counters.txt": ("sysfs /sys/class/infiniband", "UNKNOWN", ()),
    "slurm_22_05_scontrol_show_node_o.txt": (None, "UNKNOWN", ()),
    "slurm_22_05_scontrol_show_node_o_idle.txt": (None, "UNKNOWN", ()),
    "slurm_22_05_sinfo_N_state_user_time_reason.txt": (None, "UNKNOWN", ()),
    "slurm_22_05_sinfo_N_state_user_time_reason_idle.txt": (None, "UNKNOWN", ()),
    "slurm_22_05_scontrol_show_job_o_burnin.txt": (None, "UNKNOWN", ()),  # burnin run --launcher slurm
    "slurm_22_05_scontrol_show_reservation_o.txt": (None, "UNKNOWN", ()),  # burnin nightly --reservation
    # Slurm accounting: read by the history signals, judged by no check
    "slurm_22_05_sacct_parsable2_node_fail_requeued.txt": (None, "UNKNOWN", ()),
    "slurm_22_05_sacctmgr_list_event_node_down.txt": (None, "UNKNOWN", ()),
    "sysfs_pci_link_speed_width_format_reference.txt": (None, "UNKNOWN", ()),
    # Tools no stage reads (shared corpus): recognised, judged by no check, UNKNOWN saying what to run
    "dcgmi_discovery_l_h100_name_null_bug.txt": ("dcgmi discovery -l", "UNKNOWN", ()),
    "dcgmi_nvlink_link_status_all_down.txt": ("dcgmi nvlink", "UNKNOWN", ()),
    "dcgmi_nvlink_e_gpu0_doc_example.txt": ("dcgmi nvlink", "UNKNOWN", ()),
    "mlxlink_show_mo_cx7_ndr_dac_active.txt": ("mlxlink", "UNKNOWN", ()),
    "nvidia_fabricmanager_log_h100_sxid12028_and_restart.txt": ("nv-fabricmanager log", "UNKNOWN", ()),
    "nvidia_smi_q_x_xml_l4_555_PARTIAL.xml": ("nvidia-smi -q -x (XML)", "UNKNOWN", ()),
    # References, not tool outputs: C source of dcgmi health, NVIDIA's Xid catalogue
    "dcgmi_health_c_format_reference_from_source.txt": (None, "UNKNOWN", ()),
    "xid_catalog_nvidia_selected.md": (None, "UNKNOWN", ()),
}

# Samples in the directory that INDEX.md (the shared corpus's) does not list yet.
NOT_IN_INDEX = {
    # Slurm's outputs (the service engineer's): no check judges them offline.
    "slurm_22_05_scontrol_show_node_o.txt",
    "slurm_22_05_scontrol_show_node_o_idle.txt",
    "slurm_22_05_sinfo_N_state_user_time_reason.txt",
    "slurm_22_05_sinfo_N_state_user_time_reason_idle.txt",
    "slurm_22_05_scontrol_show_job_o_burnin.txt",  # tests/fixtures/slurm-capture.md
    "slurm_22_05_scontrol_show_reservation_o.txt",  # tests/fixtures/slurm-capture.md
}


def load(name: str) -> str:
    """A sample's tool output: its '# SOURCE:' line (INDEX.md's convention) stripped."""
    text = (SAMPLES_DIR / name).read_text(encoding="utf-8", errors="replace")
    first, _, rest = text.partition("\n")
    return rest if first.startswith("# SOURCE:") else text


def _index_names() -> set[str]:
    """The sample files INDEX.md's tables name (a cell may name two: 'a.txt / b.txt')."""
    names: set[str] = set()
    for line in (SAMPLES_DIR / "INDEX.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith(("| File", "|---")):
            names.update(re.findall(r"[\w.\-]+\.(?:txt|json|tsv|xml|md)", line.split("|")[1]))
    return names


def _files() -> set[str]:
    return {p.name for p in SAMPLES_DIR.iterdir() if p.is_file() and p.name != "INDEX.md"}


def test_every_sample_has_an_index_entry_and_an_expectation() -> None:
    index, files = _index_names(), _files()
    assert files - index == NOT_IN_INDEX, "samples without an INDEX.md entry"
    assert index - files == set(), "INDEX.md entries without their file (copy it from the shared corpus)"
    assert set(EXPECT) == files, "samples without an expectation here (add one to EXPECT)"


# The shared sample corpus this directory copies (next to the checkout, as in the standins tests).
SHARED_SAMPLES = SAMPLES_DIR.parents[2].parent / "shared" / "samples"


@pytest.mark.skipif(not SHARED_SAMPLES.is_dir(), reason="shared sample corpus not present")
def test_every_sample_of_the_shared_corpus_is_here_verbatim() -> None:
    """So each is recognised and judged above: a sample added to the corpus fails here until it
    is copied, and then the test above until it has an expectation."""
    shared = {p.name for p in SHARED_SAMPLES.iterdir() if p.is_file() and p.name != "INDEX.md"}
    assert shared - _files() == set(), "shared samples not copied into tests/fixtures/samples"
    changed = [
        n for n in sorted(shared) if (SHARED_SAMPLES / n).read_bytes() != (SAMPLES_DIR / n).read_bytes()
    ]
    assert changed == [], "copies that differ from the shared corpus"


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_sample_is_recognised_as_its_tool(name: str) -> None:
    tool, _, _ = EXPECT[name]
    got = recognise(load(name))
    assert (got.tool.name if got.tool else None) == tool, got.reason
    if tool is not None:
        assert 0 < got.confidence <= 1 and got.reason


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_sample_is_judged_as_index_says(name: str) -> None:
    tool, verdict, overrides = EXPECT[name]
    evaluation = evaluate_text(load(name), apply_overrides(PROFILE, overrides))
    assert evaluation.verdict.value == verdict, evaluation.to_dict()
    assert evaluation.tool == tool
    if verdict == "UNKNOWN":
        assert evaluation.reason  # it says why
    for result in evaluation.results:
        for finding in result.findings:
            assert finding.message, (name, finding)


def test_an_unrecognised_text_is_unknown_naming_the_tools() -> None:
    evaluation = evaluate_text("hello world\nthis is not a tool\n", PROFILE)
    assert evaluation.verdict is Verdict.UNKNOWN and evaluation.tool is None
    assert evaluation.reason.startswith("not recognised: looks like none of nvidia-smi -q")


def test_two_tools_equally_likely_are_ambiguous_and_unknown() -> None:
    text = (
        "# Port counters: Lid 1 port 1\nPortXmitData:.....5\n"
        "Infiniband device 'mlx5_0' port 1 status:\n\tphys state:\t5: LinkUp\n"
    )
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.verdict is Verdict.UNKNOWN
    assert evaluation.reason.startswith("ambiguous: looks like ")
    assert "perfquery" in evaluation.reason and "ibstatus" in evaluation.reason


def test_the_stronger_marker_wins_a_paste_of_two_tools() -> None:
    """lspci LnkCap/LnkSta lines with an nvidia-smi CSV under them (INDEX.md section 5)."""
    got = recognise(load("lspci_gpu_lnksta_downgraded_2_5gt_x8_with_nvsmi.txt"))
    assert got.tool is not None and got.tool.name == "lspci -vv"
    assert [c.tool.name for c in got.candidates] == ["lspci -vv", "nvidia-smi --query-gpu CSV"]
    assert got.confidence < 1


def test_nvidia_smi_q_is_judged_by_its_four_checks() -> None:
    evaluation = evaluate_text(load("nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt"), PROFILE)
    assert evaluation.checks == ("gpu_inventory", "gpu_ecc", "gpu_memory", "gpu_versions")
    assert {f["check"] for f in evaluation.findings()} >= {"gpu_versions"}
    assert evaluation.to_dict()["check"] == list(evaluation.checks)


def test_a_check_named_judges_whatever_the_text_looks_like() -> None:
    evaluation = evaluate_text(load("ibstat_h100_ndr_all_active.txt"), PROFILE, "kernel_log")
    assert evaluation.given and evaluation.checks == ("kernel_log",)
    assert evaluation.verdict is Verdict.UNKNOWN and "kernel-log line" in evaluation.reason
    assert evaluation.tool == "ibstat"  # still said, so the operator sees the mismatch


def test_an_unknown_check_name_is_refused_listing_the_checks() -> None:
    with pytest.raises(BadInput, match=r"unknown check 'nope' \(checks: .*nccl_tests.*pcie_lspci"):
        evaluate_text("x\n", PROFILE, "nope")


# ---- garbage, empty, binary and truncated inputs of every tool -------------------------------

# One real capture of each tool a check judges (the lab's recordings where the corpus has none).
LAB = SAMPLES_DIR.parents[2] / "bringup" / "lab" / "standins" / "samples"


# A healthy capture (PASS against the shipped profile) where there is one: cut, it must not pass.
def _healthiest(tool: str) -> str | None:
    """A capture of the tool that passes (against the shipped profile if one does), else any."""
    names = sorted(n for n, (expected, _, _) in EXPECT.items() if expected == tool)
    return min(names, key=lambda n: (EXPECT[n][1] != "PASS", bool(EXPECT[n][2])), default=None)


REPRESENTATIVE = {t.name: name for t in TOOLS if t.checks and (name := _healthiest(t.name))}
LAB_ONLY = {
    "burnin-stress": "burnin_stress_8xh100_SYNTHETIC.json",
    "df -Pk": "df_pk_8xh100_node_SYNTHETIC.txt",
    "ofed_info -s": "ofed_info_s_doca_ofed_24_04_0_6_6_SYNTHETIC.txt",
    "systemctl is-active": "systemctl_is_active_active_SYNTHETIC.txt",
}


def _capture(tool: str) -> str:
    if tool in REPRESENTATIVE:
        return load(REPRESENTATIVE[tool])
    return (LAB / LAB_ONLY[tool]).read_text(encoding="utf-8").split("\n", 1)[1]


JUDGED = sorted(t.name for t in TOOLS if t.checks and (t.name in REPRESENTATIVE or t.name in LAB_ONLY))


def test_every_judged_tool_has_a_capture_here() -> None:
    """The PCIe collector's JSON (this machine's own is judged in checks/test_robust.py) and zpool
    status are the judged tools with no capture in either corpus."""
    missing = sorted(t.name for t in TOOLS if t.checks and t.name not in JUDGED)
    assert missing == ["burnin PCIe collector (sysfs)", "zpool status -x"]


@pytest.mark.parametrize("tool", JUDGED)
def test_empty_and_blank_inputs_are_unknown(tool: str) -> None:
    """Recognised as nothing, and judged by each of the tool's checks named (--check)."""
    for text in ("", "\n", "   \n\n"):
        assert evaluate_text(text, PROFILE).verdict is Verdict.UNKNOWN
        for check in find_tool(tool).checks:
            evaluation = evaluate_text(text, PROFILE, check)
            assert evaluation.verdict is Verdict.UNKNOWN and evaluation.reason, (tool, check, text)


def test_nccl_tests_wrong_elements_through_evaluate_fail_as_corruption() -> None:
    """A capture that passes a lower floor, with one size's #wrong set: data corruption, at any busbw."""
    text = load("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt")
    profile = apply_overrides(PROFILE, ("floors.nccl_busbw_multi_node_gbps=80",))
    assert evaluate_text(text, profile).verdict is Verdict.PASS
    row = next(line for line in text.splitlines() if line.split()[:1] == ["1048576"])
    assert row.endswith("      0")
    evaluation = evaluate_text(text.replace(row, row[:-1] + "5"), profile)
    assert evaluation.tool == "nccl-tests" and evaluation.verdict is Verdict.FAIL
    assert any("#wrong" in f["message"] for f in evaluation.findings()), evaluation.findings()


@pytest.mark.parametrize("tool", JUDGED)
def test_a_capture_cut_mid_line_is_unknown(tool: str) -> None:
    text = _capture(tool).rstrip("\n")
    for fraction in (0.3, 0.6, 0.95):
        end = max(1, int(len(text) * fraction))
        while end > 1 and text[end - 1] == "\n":
            end -= 1
        evaluation = evaluate_text(text[:end], PROFILE)
        assert evaluation.verdict is Verdict.UNKNOWN, (tool, end, evaluation.reason)


# Outputs that say how much of them there is (a count, a footer, a summary, a closed table):
# their first lines then noise are cut outputs. A kernel log, df, lspci, perfquery, a CSV, the
# one-line outputs (ofed_info, systemctl) have no end: their first lines are a shorter output.
WITH_AN_END = sorted(
    set(JUDGED)
    - {
        "dmesg / journalctl -k",
        "df -Pk",
        "lspci -vv",
        "perfquery",
        "nvidia-smi --query-gpu CSV",
        "nvidia-smi -L",
        "ofed_info -s",
        "systemctl is-active",
        # a log of several runs, each whole at its table's closing line (a cut inside a table is
        # UNKNOWN: test_evidence_checks.py, the -a sweep sample)
        "ib_write_bw / ib_read_bw (perftest)",
    }
)


@pytest.mark.parametrize("tool", WITH_AN_END)
def test_a_capture_cut_at_a_line_end_never_passes(tool: str) -> None:
    """Every line end of the capture (60 spread over a long one): a cut output of a tool that says
    how much of it there is, never a shorter healthy one. A cut that is whole output of another
    tool is that tool's (gpu-burn's first lines are `nvidia-smi -L` of the same GPUs)."""
    name = REPRESENTATIVE.get(tool) or LAB_ONLY[tool]
    profile = apply_overrides(PROFILE, EXPECT[name][2] if name in EXPECT else ())
    lines = _capture(tool).splitlines(keepends=True)
    while lines and not lines[-1].strip():
        lines.pop()
    passed = []
    for end in range(1, len(lines), max(1, len(lines) // 60)):
        evaluation = evaluate_text("".join(lines[:end]), profile)
        if evaluation.verdict is Verdict.PASS and evaluation.tool == tool:
            passed.append(end)
    assert passed == [], f"{tool} ({name}) passes cut after {passed[:10]} lines"


@pytest.mark.parametrize("tool", JUDGED)
def test_a_capture_with_nul_bytes_is_unknown_as_binary(tool: str) -> None:
    data = _capture(tool).encode()
    data = data[:200] + b"\x00\x01\x02" + data[200:]
    for check in (None, *find_tool(tool).checks):
        evaluation = evaluate_evidence(data, PROFILE, source="f.txt", check_name=check)
        assert evaluation.verdict is Verdict.UNKNOWN and not evaluation.results
        assert evaluation.reason.startswith("f.txt: a binary file"), evaluation.reason
    with pytest.raises(BadInput, match="binary"):
        read_evidence(data, "f.txt")  # what is read as text is refused; the answer is UNKNOWN


def test_an_oversized_file_is_refused() -> None:
    from burnin.evaluate.handed_in import MAX_BYTES

    with pytest.raises(BadInput, match="over the 64 MiB limit"):
        read_evidence(b"a" * (MAX_BYTES + 1), "big.log")


robust = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@robust
@given(
    tool=st.sampled_from(WITH_AN_END),
    garbage=st.text(min_size=1, max_size=400).filter(str.strip),
    share=st.floats(0.05, 0.5),
)
def test_a_tools_first_lines_then_garbage_never_pass(tool: str, garbage: str, share: float) -> None:
    """The tool's own first lines (so it is recognised as that tool), then noise for the rest."""
    lines = _capture(tool).splitlines(keepends=True)
    head = "".join(lines[: max(1, int(len(lines) * share))])
    evaluation = evaluate_text(head + garbage + "\n", PROFILE)
    assert evaluation.verdict is not Verdict.PASS, (tool, share, garbage)


@robust
@given(data=st.binary(max_size=800))
def test_random_bytes_are_refused_or_never_pass(data: bytes) -> None:
    try:
        evaluation = evaluate_evidence(data, PROFILE, source="random.bin")
    except BadInput as exc:
        assert "random.bin" in str(exc)
        return
    assert evaluation.verdict is not Verdict.PASS, data


# The real Xid 79 line (dmesg_xid79_fallen_off_bus_crashdump.txt) under each of dmesg's and
# journalctl's time formats, three lines of it.
XID79 = "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus."
TIME_FORMATS = {
    "dmesg": "[1084456.074562] {}",
    "dmesg -T": "[Sun Feb 23 16:24:18 2025] {}",
    "dmesg -H": "[  +0.000844] {}",
    "dmesg --time-format iso": "2025-01-17T15:36:26,128279+00:00 {}",
    "dmesg -x": "kern  :warn  : [1084456.074562] {}",
    "dmesg -r": "<4>[1084456.074562] {}",
    "journalctl -k": "Feb 23 16:24:18 node07 kernel: {}",
    "journalctl -k -o short-iso": "2025-02-23T16:24:18+0000 node07 kernel: {}",
    "journalctl -k -o cat": "kernel: {}",
}


@pytest.mark.parametrize("fmt", sorted(TIME_FORMATS))
def test_a_kernel_log_in_each_time_format_is_recognised_and_judged(fmt: str) -> None:
    text = "".join(TIME_FORMATS[fmt].format(XID79) + "\n" for _ in range(3))
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.tool == "dmesg / journalctl -k", (fmt, evaluation.reason)
    assert evaluation.verdict is Verdict.FAIL and "Xid 79" in evaluation.findings()[0]["message"]

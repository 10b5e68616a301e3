"""nvidia-smi parsers on the real captures (tests/fixtures/samples/index.tsv)."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.nvidia_smi import (
    decode_throttle_reasons,
    parse_gpu_list,
    parse_nvlink_status,
    parse_query,
    parse_query_gpu_csv,
    parse_table,
    parse_throttle_samples,
    parse_topology,
)

# --- nvidia-smi -q -----------------------------------------------------------------------------


def test_query_h100_power_brake(sample):
    q = parse_query(sample("nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt"))
    assert (q.driver_version, q.cuda_version, q.attached_gpus) == ("535.161.08", "12.2", 8)
    assert len(q.gpus) == 8 and q.problems == ()
    g = q.gpus[0]
    assert g.bus_id == "00000000:19:00.0" and g.bdf == "0000:19:00.0"
    assert g.product_name == "NVIDIA H100 80GB HBM3"
    assert g.serial == "1650124031592"
    assert g.uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert g.vbios_version == "96.00.74.00.0D"
    assert g.persistence_mode == "Enabled"
    assert (g.ecc_mode_current, g.ecc_mode_pending) == ("Enabled", "Enabled")
    assert g.replays == 67
    assert g.clocks_event_reasons["hw_slowdown"] is True
    assert g.clocks_event_reasons["hw_power_brake_slowdown"] is True
    assert g.clocks_event_reasons["hw_thermal_slowdown"] is False
    assert g.clocks_event_reasons["gpu_idle"] is False
    assert (g.pcie.gen_max, g.pcie.gen_current, g.pcie.gen_host_max) == (5, 5, 5)
    assert (g.pcie.width_max, g.pcie.width_current) == (16, 16)
    # SRAM Uncorrectable is split into Parity + SEC-DED on this driver; the canonical key is their sum
    assert g.ecc_volatile["sram_uncorrectable_parity"] == 0
    assert g.ecc_volatile["sram_uncorrectable_sec_ded"] == 0
    assert g.ecc_volatile["sram_uncorrectable"] == 0
    assert g.ecc_aggregate["dram_uncorrectable"] == 0
    assert "sram_threshold_exceeded" not in g.ecc_aggregate  # a Yes/No flag, not a counter
    assert g.retired_pages is None  # all N/A on Hopper
    assert g.remapped_rows is not None
    assert (g.remapped_rows.correctable, g.remapped_rows.uncorrectable) == (0, 0)
    assert (g.remapped_rows.pending, g.remapped_rows.failure) == (False, False)
    assert g.remapped_rows.histogram["max"] == 2560
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success")
    assert g.temperature_c == 29
    assert g.power_draw_w == pytest.approx(67.74)
    assert g.power_limit_w == pytest.approx(700.0)
    assert g.reset_required is False
    assert [x.replays for x in q.gpus] == [67, 63, 52, 43, 49, 53, 82, 67]
    assert all(x.clocks_event_reasons["hw_power_brake_slowdown"] for x in q.gpus)


def test_query_h100_535_183_regression(sample):
    q = parse_query(sample("nvidia_smi_q_8xh100_535_183.txt"))
    assert q.driver_version == "535.183.01" and len(q.gpus) == 8
    assert [g.bus_id for g in q.gpus][:3] == ["00000000:53:00.0", "00000000:64:00.0", "00000000:75:00.0"]
    assert [g.replays for g in q.gpus][:3] == [120, 111, 58]
    assert q.gpus[0].clocks_event_reasons["gpu_idle"] is True
    third = q.gpus[2].clocks_event_reasons
    active = {name for name, on in third.items() if on}
    assert active == {"sw_power_cap", "hw_power_brake_slowdown", "sw_thermal_slowdown"}
    assert q.gpus[0].pcie.gen_host_max is None  # this driver does not print Host Max


def test_query_a10_remapped_rows_pending(sample):
    q = parse_query(sample("nvidia_smi_q_a10_remapped_rows_pending.txt"))
    assert q.attached_gpus == 1 and len(q.gpus) == 1
    g = q.gpus[0]
    assert g.product_name == "NVIDIA A10"
    rr = g.remapped_rows
    assert rr is not None
    assert (rr.correctable, rr.uncorrectable, rr.pending, rr.failure) == (0, 4, True, False)
    assert rr.histogram == {"max": 192, "high": 0, "partial": 0, "low": 0, "none": 0}
    # Ampere layout without the Parity/SEC-DED split
    assert g.ecc_volatile == {
        "sram_correctable": 0,
        "sram_uncorrectable": 0,
        "dram_correctable": 0,
        "dram_uncorrectable": 0,
    }
    assert (g.fabric_state, g.fabric_status) == (None, None)  # N/A = not supported
    assert g.pcie.gen_host_max is None


def test_query_titan_v_remap_na_is_not_supported(sample):
    q = parse_query(sample("nvidia_smi_q_titanv_remap_na.txt"))
    g = q.gpus[0]
    assert q.driver_version == "560.35.03"
    assert g.remapped_rows is None
    assert g.retired_pages is None
    assert g.ecc_mode_current is None
    # Volta layout: Single/Double Bit per memory, all N/A; canonical keys exist and are None
    assert "single_bit_device_memory" in g.ecc_volatile
    assert g.ecc_volatile["double_bit_total"] is None
    assert g.ecc_volatile["dram_uncorrectable"] is None
    assert g.ecc_volatile["sram_correctable"] is None
    assert (g.pcie.gen_max, g.pcie.gen_current) == (3, 1)
    assert g.persistence_mode == "Disabled"
    assert g.temperature_c == 44


def test_query_volta_layout_maps_to_dram_and_sram():
    text = """==============NVSMI LOG==============

Driver Version                            : 470.82.01
Attached GPUs                             : 1
GPU 00000000:06:00.0
    Product Name                          : Tesla V100-SXM2-32GB
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 3
                Register File             : 1
                L1 Cache                  : 0
                L2 Cache                  : 2
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : N/A
                Total                     : 6
            Double Bit
                Device Memory             : 1
                Register File             : 0
                L1 Cache                  : 0
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : 0
                Total                     : 1
    Retired Pages
        Single Bit ECC                    : 2
        Double Bit ECC                    : 1
        Pending                           : Yes
    Clocks Throttle Reasons
        Idle                              : Not Active
        HW Slowdown                       : Active
    Power Readings
        Power Draw                        : 300.50 W
        Power Limit                       : 300.00 W
"""
    g = parse_query(text).gpus[0]
    assert g.ecc_volatile["dram_correctable"] == 3
    assert g.ecc_volatile["dram_uncorrectable"] == 1
    assert g.ecc_volatile["sram_correctable"] == 3  # register file 1 + L2 2
    assert g.ecc_volatile["sram_uncorrectable"] == 0
    assert g.retired_pages is not None
    assert (g.retired_pages.sbe, g.retired_pages.dbe, g.retired_pages.pending) == (2, 1, True)
    # pre-535 'Clocks Throttle Reasons' read the same way as 'Clocks Event Reasons'
    assert g.clocks_event_reasons == {"gpu_idle": False, "hw_slowdown": True}
    assert g.power_draw_w == pytest.approx(300.5)
    assert g.power_limit_w == pytest.approx(300.0)


def test_query_page_retirement_view_clean(sample):
    q = parse_query(sample("nvidia_smi_q_d_page_retirement_8gpu_clean.txt"))
    assert q.driver_version == "535.86.10" and len(q.gpus) == 8
    assert [g.bdf for g in q.gpus][:2] == ["0001:00:00.0", "0002:00:00.0"]
    for g in q.gpus:
        assert g.retired_pages is not None
        assert (g.retired_pages.sbe, g.retired_pages.dbe, g.retired_pages.pending) == (0, 0, False)
        assert g.product_name is None and g.replays is None  # not in the -d view


def test_query_page_retirement_view_bad(sample):
    q = parse_query(sample("nvidia_smi_q_d_page_retirement_8gpu_bad_SYNTHETIC.txt"))
    got = [(g.retired_pages.sbe, g.retired_pages.dbe, g.retired_pages.pending) for g in q.gpus]
    assert got == [
        (60, 5, False),
        (2, 61, True),
        (0, 0, False),
        (6, 0, True),
        (0, 0, False),
        (20, 45, True),
        (0, 0, False),
        (8, 56, True),
    ]


def test_query_flags_missing_gpu_blocks(sample):
    text = sample("nvidia_smi_q_d_page_retirement_8gpu_clean.txt")
    cut = text[: text.index("GPU 00000003:00:00.0")]
    q = parse_query(cut)
    assert len(q.gpus) == 2
    assert q.problems == ("'Attached GPUs : 8' but 2 GPU block(s) found",)


def test_query_driver_610_names_the_version_without_its_deprecation_notice(sample):
    """Driver 610 prints 'Driver Version : 610.43.02 [Deprecated; ... Use KMD Version instead]' and a
    'KMD Version' line (a real H200 capture): the version is the KMD's, the bracket a notice."""
    q = parse_query(sample("nvidia_smi_q_h200_610_43_idle.txt"))
    assert (q.driver_version, q.cuda_version) == ("610.43.02", "13.3")
    assert [g.product_name for g in q.gpus] == ["NVIDIA H200"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world\n",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
        "latest NVIDIA driver is installed and running.\n",
    ],
)
def test_query_rejects_non_query_text(text):
    with pytest.raises(ParseError):
        parse_query(text)


# --- nvlink -s ---------------------------------------------------------------------------------


def test_nvlink_a100_ok(sample):
    s = parse_nvlink_status(sample("nvidia_smi_nvlink_s_8xa100_ok.txt"))
    assert not s.all_inactive
    assert [g.index for g in s.gpus] == list(range(8))
    assert s.gpus[0].uuid == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    for g in s.gpus:
        assert len(g.links) == 12
        assert {link.speed_gbps for link in g.links} == {25.0}


def test_nvlink_h200_degraded(sample):
    s = parse_nvlink_status(sample("nvidia_smi_nvlink_s_h200_degraded_links.txt"))
    gpu0 = s.gpus[0]
    assert gpu0.name == "NVIDIA H200" and len(gpu0.links) == 18
    assert gpu0.links[1].speed_gbps == pytest.approx(26.562)
    assert gpu0.links[2].speed_gbps == pytest.approx(1.0)
    slow = {link.number for link in gpu0.links if link.speed_gbps < 26}
    assert slow == {2, 3, 4, 10}
    assert all(link.speed_gbps == pytest.approx(26.562) for link in s.gpus[1].links)


def test_nvlink_all_inactive(sample):
    s = parse_nvlink_status(sample("nvidia_smi_nvlink_s_all_links_inactive.txt"))
    assert s.all_inactive
    assert [(g.index, g.all_inactive, g.links) for g in s.gpus] == [(6, True, ())]


def test_nvlink_inactive_spellings():
    text = (
        "GPU 0: NVIDIA B200 (UUID: GPU-1)\n"
        "NVML: Unable to retrieve NVLink information as all links are inActive\n"
        "GPU 1: NVIDIA B200 (UUID: GPU-2)\n"
        "\t Link 0: <inactive>\n\t Link 1: 50 GB/s\n"
    )
    s = parse_nvlink_status(text)
    assert s.all_inactive and s.gpus[0].all_inactive and not s.gpus[1].all_inactive
    assert [(lk.number, lk.speed_gbps, lk.inactive) for lk in s.gpus[1].links] == [
        (0, None, True),
        (1, 50.0, False),
    ]


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("nvidia_smi_nvlink_s_h100_mig_590_48.txt", "mig"),
        ("nvidia_smi_nvlink_s_l40s_595_80.txt", "absent"),
        ("nvidia_smi_nvlink_s_rtx4080s_595_71.txt", "absent"),
    ],
)
def test_nvlink_a_gpus_answer_in_place_of_its_links(sample, name, answer):
    """nvidia-smi prints one sentence under a GPU whose links it cannot list: in MIG mode, or on a
    part with no NVLink at all."""
    s = parse_nvlink_status(sample(name))
    assert [(g.index, g.links, g.no_links) for g in s.gpus] == [(0, (), answer)]
    assert not s.all_inactive


def test_nvlink_all_inactive_in_nvml_s_other_case(sample):
    s = parse_nvlink_status(sample("nvidia_smi_nvlink_s_rtx2080s_610_57.txt"))
    assert [(g.name, g.all_inactive, g.no_links) for g in s.gpus] == [
        ("NVIDIA GeForce RTX 2080 SUPER", True, "")
    ]


@pytest.mark.parametrize(
    "cut", ["Device does not have or supp", "Nvlink queries are not supported for Devices in"]
)
def test_nvlink_a_cut_answer_is_no_answer(cut):
    s = parse_nvlink_status(f"GPU 0: NVIDIA L40S (UUID: GPU-1)\n{cut}")
    assert s.gpus[0].no_links == ""


# --- -L ----------------------------------------------------------------------------------------


def test_gpu_list_ignores_mig_lines(sample):
    gpus = parse_gpu_list(sample("nvidia_smi_L_4xh100_with_mig.txt"))
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert gpus[0].uuid == "GPU-d6a2c177-4cd8-8d01-0310-79f2720f37de"
    assert gpus[3].mig_devices[0].profile == "2g.20gb"
    assert gpus[3].mig_devices[0].uuid == "MIG-55d07ceb-ef71-58e0-87c2-0477d96fa03f"
    assert all(not g.mig_devices for g in gpus[:3])


def test_gpu_list_no_devices():
    assert parse_gpu_list("No devices were found\n") == []
    with pytest.raises(ParseError):
        parse_gpu_list("command not found\n")


# --- throttle sampling CSV (no real capture exists: strings written for the test) ---------------


def test_throttle_samples_rows_header_na_and_repeats():
    text = (
        "index, clocks_throttle_reasons.active, temperature.gpu, power.draw\n"
        "3, 0x0000000000000088, 67, 690.12\n"
        "\n"
        "4, 0x0000000000000001, 40, 75.50\n"
        "3, [N/A], [N/A], [N/A]\n"
        "3, 0x0000000000000004, 68 C, 700.00 W\n"
    )
    samples = parse_throttle_samples(text)
    assert [(s.index, s.reasons_mask) for s in samples] == [(3, 0x88), (4, 0x1), (3, None), (3, 0x4)]
    assert samples[0].reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert samples[0].temperature_c == 67 and samples[0].power_draw_w == pytest.approx(690.12)
    assert samples[2].temperature_c is None and samples[2].reasons == []
    assert samples[3].temperature_c == 68 and samples[3].power_draw_w == pytest.approx(700.0)


def test_throttle_samples_without_rows_is_an_error():
    with pytest.raises(ParseError):
        parse_throttle_samples("index, clocks_throttle_reasons.active, temperature.gpu, power.draw\n")


def test_decode_throttle_reasons_bits():
    assert decode_throttle_reasons(0) == []
    assert decode_throttle_reasons(0x1FF) == [
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "display_clock_setting",
    ]
    assert decode_throttle_reasons(0x240) == ["hw_thermal_slowdown", "unknown_0x200"]
    with pytest.raises(ParseError):
        decode_throttle_reasons(-1)


# --- --query-gpu CSV ---------------------------------------------------------------------------


def test_query_gpu_csv_l40s_idle(sample):
    rows = parse_query_gpu_csv(sample("nvidia_smi_query_gpu_pcie_link_csv_8xl40s_idle_gen1.txt"))
    assert len(rows) == 8
    assert rows[0] == {
        "index": "0",
        "pcie.link.gen.current": "1",
        "pcie.link.gen.max": "4",
        "pcie.link.width.current": "16",
        "pcie.link.width.max": "16",
    }
    assert [r["index"] for r in rows] == [str(i) for i in range(8)]


def test_query_gpu_csv_idle_then_load_sections(sample):
    rows = parse_query_gpu_csv(sample("nvidia_smi_query_gpu_pcie_link_csv_idle_vs_load.txt"))
    assert [(r["pcie.link.gen.current"], r["pcie.link.width.current"]) for r in rows] == [
        ("1", "8"),
        ("4", "8"),
    ]


def test_query_gpu_csv_units_na_and_noheader():
    text = "index, memory.used [MiB], ecc.errors.uncorrected.volatile.total\n0, 1 MiB, [N/A]\n"
    assert parse_query_gpu_csv(text) == [
        {"index": "0", "memory.used": "1 MiB", "ecc.errors.uncorrected.volatile.total": None}
    ]
    assert parse_query_gpu_csv("0, 5\n1, 4\n", fields=["index", "pcie.link.gen.current"]) == [
        {"index": "0", "pcie.link.gen.current": "5"},
        {"index": "1", "pcie.link.gen.current": "4"},
    ]
    with pytest.raises(ParseError):
        parse_query_gpu_csv("0, 5\n")


# --- topo -m -----------------------------------------------------------------------------------


def test_topology_h100_6nic(sample):
    t = parse_topology(sample("nvidia_smi_topo_m_8xh100_6nic.txt"))
    assert t.devices == tuple([f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(6)])
    assert all(t.link(f"GPU{a}", f"GPU{b}") == "NV18" for a in range(8) for b in range(8) if a != b)
    assert t.link("GPU0", "GPU0") == "X"
    assert (t.link("GPU0", "NIC0"), t.link("GPU0", "NIC1"), t.link("GPU0", "NIC2")) == ("PIX", "PIX", "NODE")
    assert t.link("GPU3", "NIC2") == "PIX"
    assert t.nic_legend == {f"NIC{i}": f"mlx5_{i}" for i in range(6)}
    # empty CPU Affinity cells (double tabs) must not shift the NUMA columns
    assert t.cpu_affinity["GPU0"] is None and t.numa_affinity["GPU0"] == "0"
    assert t.numa_affinity["GPU7"] == "1"
    assert t.gpu_numa_id["GPU0"] is None  # N/A


# --- default table -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "driver", "cuda", "persistence"),
    [
        ("nvidia_smi_table_550.txt", "550.90.07", "12.4", True),
        ("nvidia_smi_table_8xh100_persistence_off.txt", "560.35.03", "12.6", False),
    ],
)
def test_table(sample, name, driver, cuda, persistence):
    t = parse_table(sample(name))
    assert (t.driver_version, t.cuda_version) == (driver, cuda)
    assert len(t.gpus) == 8
    assert [g.index for g in t.gpus] == list(range(8))
    assert {g.name for g in t.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert {g.persistence_mode for g in t.gpus} == {persistence}
    assert {g.volatile_uncorrected_ecc for g in t.gpus} == {0}
    assert {g.power_cap_w for g in t.gpus} == {700.0}
    assert t.gpus[7].bus_id == "00000000:DB:00.0"
    assert t.gpus[0].memory_total_mib == 81559
    assert t.gpus[0].mig_mode == "Disabled"
    assert t.no_running_processes


def test_table_of_driver_610_reads_the_kmd_version(sample):
    """Driver 610's title reads 'NVIDIA-SMI 610.43.02  KMD Version: 610.43.02  CUDA UMD Version: 13.3'."""
    t = parse_table(sample("nvidia_smi_table_h200_610_43_idle.txt"))
    assert (t.smi_version, t.driver_version, t.cuda_version) == ("610.43.02", "610.43.02", "13.3")
    assert [g.name for g in t.gpus] == ["NVIDIA H200"] and t.whole


def test_table_of_a_geforce_with_its_fan_unreadable(sample):
    t = parse_table(sample("nvidia_smi_table_geforce_525_fan_err.txt"))
    assert (t.driver_version, len(t.gpus)) == ("525.125.06", 1)
    gpu = t.gpus[0]
    assert (gpu.name, gpu.fan, gpu.unreadable, gpu.power_cap_w) == (
        "NVIDIA GeForce ...",
        "ERR!",
        ("Fan",),
        450.0,
    )
    assert t.whole and not t.lists_processes  # it ends at the GPUs' closing border


@pytest.mark.parametrize(
    "name",
    [
        "nvidia_smi_table_l40s_595_80_load.txt",
        "nvidia_smi_table_550.txt",
        "nvidia_smi_table_rtx4080s_595_71_load.txt",
    ],
)
def test_table_whole_with_its_processes_box(sample, name):
    t = parse_table(sample(name))
    assert t.whole and t.lists_processes
    assert all(g.unreadable == () for g in t.gpus)
    assert parse_table(sample(name).rstrip("\n")).whole


def test_table_cut_anywhere_but_at_a_closing_border_is_not_whole(sample):
    text = sample("nvidia_smi_table_550.txt")
    lines = text.splitlines(keepends=True)
    for end in range(1, len(lines)):
        head = "".join(lines[:end])
        try:
            t = parse_table(head)
        except ParseError:
            continue
        last = next(ln for ln in reversed(lines[:end]) if ln.strip())
        closed = last.startswith("+-") and len(last.rstrip()) == len(lines[1].rstrip())
        assert t.whole is closed, (end, last)
        assert not t.lists_processes or end == len(lines)
        mid = head + lines[end][: len(lines[end]) // 2]
        if lines[end].startswith(("+", "|")) and len(lines[end].strip()) > 2:
            assert not parse_table(mid).whole, (end, mid[-60:])


# The Fabric section as drivers 550+ print it for multi-node NVLink: the block a GPU showed while
# its registration hung, pasted in https://github.com/NVIDIA/gpu-operator/issues/2511 (driver
# 580.159.04), and a GB200 GPU's domain as gpud logged it (https://github.com/leptonai/gpud/pull/1106).
FABRIC_IN_PROGRESS = """\
    Fabric
        State                                          : In Progress
        Status                                         : N/A
        CliqueId                                       : N/A
        ClusterUUID                                    : N/A
        Health
            Summary                                    : N/A
            Bandwidth                                  : N/A
            Route Recovery in progress                 : N/A
            Route Unhealthy                            : N/A
            Access Timeout Recovery                    : N/A
            Incorrect Configuration                    : N/A
            Partition Assigned                         : N/A
"""
FABRIC_JOINED = """\
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 4026
        ClusterUUID                       : 9c6f5af3-53bf-49b5-a436-b66766c413c3
        Health
            Summary                       : Healthy
            Bandwidth                     : Full
"""
H100_FABRIC = (
    "    Fabric\n"
    "        State                             : Completed\n"
    "        Status                            : Success\n"
)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (FABRIC_IN_PROGRESS, ("In Progress", None, None, None, None, None)),
        (
            FABRIC_JOINED,
            ("Completed", "Success", "4026", "9c6f5af3-53bf-49b5-a436-b66766c413c3", "Healthy", "Full"),
        ),
    ],
)
def test_query_fabric_domain_and_health(sample, block, expected):
    text = sample("nvidia_smi_q_8xh100_535_183.txt").replace(H100_FABRIC, block, 1)
    q = parse_query(text)
    assert q.problems == ()
    g = q.gpus[0]
    fabric = (
        g.fabric_state,
        g.fabric_status,
        g.fabric_clique_id,
        g.fabric_cluster_uuid,
        g.fabric_health,
        g.fabric_bandwidth,
    )
    assert fabric == expected
    # the other GPUs keep the H100's own section: state and status, no NVLink domain
    assert (q.gpus[1].fabric_state, q.gpus[1].fabric_clique_id, q.gpus[1].fabric_health) == (
        "Completed",
        None,
        None,
    )


_PAGE_VIEW = (
    "Driver Version                            : 535.86.10\n\nAttached GPUs                             : 2\n"
    + "".join(
        f"GPU 0000000{i}:00:00.0\n    Retired Pages\n        Single Bit ECC                    : 0\n"
        "        Double Bit ECC                    : 0\n        Pending Page Blacklist            : No\n\n"
        for i in (1, 2)
    )
)


@pytest.mark.parametrize(
    "end, cut",
    [
        ("        Pending Page Blacklist            : N", True),  # 'No' stopped mid-word
        ("        Pending Page Blacklist  ", True),  # stopped before its colon: no value at all
        ("        Pending Page Blacklist            : No", False),  # whole, only no final newline
    ],
)
def test_a_d_view_whose_unterminated_last_line_stopped_inside_it_is_cut(end, cut):
    whole = _PAGE_VIEW.rstrip("\n")
    text = whole[: whole.rindex("\n") + 1] + end
    q = parse_query(text)
    if cut:
        assert q.problems and "cut short" in q.problems[0], q.problems
    else:
        assert q.problems == () and q.gpus[-1].retired_pages.pending is False


def test_topology_sets_apart_the_rows_a_paste_ran_together(sample):
    """A real 8x B200 matrix pasted into a public issue lost a tab in 12 rows ('PXBNODE', 'SYSSYS',
    ' X NODE'): their cells shift left and the CPU affinity lands in a NIC column. Such a row is
    not read as links; the intact rows still are."""
    t = parse_topology(sample("nvidia_smi_topo_m_8xb200_16nic_paste_damaged_PARTIAL.txt"))
    assert set(t.damaged) == {"GPU2", "GPU4", "GPU5", "GPU6", "GPU7", "NIC8"} | {
        f"NIC{i}" for i in range(10, 16)
    }
    assert "PXBNODE" in t.damaged["GPU2"] and "SYSSYS" in t.damaged["GPU4"]
    assert not set(t.damaged) & set(t.matrix)
    assert (t.link("GPU0", "NIC4"), t.link("GPU1", "NIC7"), t.link("GPU3", "NIC9")) == ("PXB", "PXB", "PXB")
    assert t.nic_legend["NIC15"] == "mlx5_15"

"""dmidecode -t memory, lscpu, smartctl -j / nvme smart-log -o json and fio JSON on real-format samples."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.hardware import (
    parse_dmidecode_memory,
    parse_fio_json,
    parse_lscpu,
    parse_nvme_smart_log,
    parse_smartctl_nvme,
)
from tests.unit.burnin.parsers._samples import load, names

PARSERS = (parse_dmidecode_memory, parse_lscpu, parse_smartctl_nvme, parse_nvme_smart_log, parse_fio_json)


def test_dmidecode_qemu_guest_one_dimm() -> None:
    (dimm,) = parse_dmidecode_memory(load("dmidecode_t_memory_qemu_1dimm.txt"))
    assert (dimm.locator, dimm.size_mib, dimm.speed_mts, dimm.configured_speed_mts) == (
        "DIMM 0",
        1024,
        4800,
        4800,
    )
    assert (dimm.manufacturer, dimm.part_number, dimm.serial) == ("Samsung", "M321R8GA0BB0-CQKZJ", "S1234567")


def test_dmidecode_empty_slot_is_a_slot_of_size_zero() -> None:
    dimms = parse_dmidecode_memory(load("dmidecode_t_memory_4slots_1empty_SYNTHETIC.txt"))
    assert [d.locator for d in dimms] == ["DIMM_A1", "DIMM_A2", "DIMM_B1", "DIMM_B2"]
    assert [d.populated for d in dimms] == [True, True, False, True]
    empty = dimms[2]
    assert (empty.size_mib, empty.speed_mts, empty.serial, empty.bank) == (0, None, "", "P0 CHANNEL B")
    assert dimms[0].size_mib == 64 * 1024


def test_dmidecode_a_record_without_its_size_line_is_a_parse_error_naming_the_slot() -> None:
    text = load("dmidecode_t_memory_qemu_1dimm.txt")
    lines = [line for line in text.splitlines(keepends=True) if not line.strip().startswith("Size:")]
    with pytest.raises(ParseError, match="DIMM 0.*Size"):
        parse_dmidecode_memory("".join(lines))


def test_lscpu_text_and_json_agree() -> None:
    text = parse_lscpu(load("lscpu_amd_epyc_kvm_2cpu.txt"))
    js = parse_lscpu(load("lscpu_J_amd_epyc_kvm_2cpu.json"))
    assert text == js
    assert (text.model_name, text.sockets, text.cores_per_socket, text.threads_per_core) == (
        "AMD EPYC",
        1,
        2,
        1,
    )
    assert (text.cpus, text.numa_nodes, text.cores) == (2, 1, 2)


def test_smartctl_healthy_qemu_nvme() -> None:
    h = parse_smartctl_nvme(load("smartctl_j_a_qemu_nvme_ok.json"))
    assert (h.device, h.model, h.serial) == ("/dev/nvme0", "QEMU NVMe Ctrl", "deadbeef")
    assert (h.critical_warning, h.media_errors, h.percentage_used, h.temperature_c) == (0, 0, 0, 50)
    assert h.warnings() == []


def test_smartctl_spare_below_threshold_names_the_bit() -> None:
    h = parse_smartctl_nvme(load("smartctl_j_a_nvme_spare_below_threshold_SYNTHETIC.json"))
    assert (h.available_spare_pct, h.spare_threshold_pct, h.media_errors) == (5, 10, 3)
    assert h.warnings() == ["available spare below threshold"]


def test_nvme_smart_log_temperature_is_kelvin() -> None:
    h = parse_nvme_smart_log(load("nvme_smart_log_json_qemu_nvme.json"), "/dev/nvme0")
    assert (h.temperature_c, h.critical_warning, h.available_spare_pct, h.device) == (50, 0, 0, "/dev/nvme0")


def test_fio_skips_the_note_line_and_reads_both_directions() -> None:
    (job,) = parse_fio_json(load("fio_json_randrw_4k_tmpfs_psync.json"))
    assert job.name == "r" and job.error == 0
    assert job.read.bw_kib_s == 739585 and round(job.read.iops) == 184896
    assert job.read.clat_p99_us == pytest.approx(1.08) and job.write.clat_p99_us == pytest.approx(0.98)


@pytest.mark.parametrize("parse", PARSERS, ids=lambda p: p.__name__)
@pytest.mark.parametrize(
    "sample", names("nvidia_smi_q_8xh100") + names("ibstat_h100_ndr") + names("dcgmi_diag_json")
)
def test_other_tools_output_is_a_parse_error(parse, sample: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse(load(sample))
    assert not exc.value.internal


@pytest.mark.parametrize(
    "parse,sample",
    [
        (parse_dmidecode_memory, "dmidecode_t_memory_qemu_1dimm.txt"),
        (parse_smartctl_nvme, "smartctl_j_a_qemu_nvme_ok.json"),
        (parse_fio_json, "fio_json_randrw_4k_tmpfs_psync.json"),
        (parse_lscpu, "lscpu_J_amd_epyc_kvm_2cpu.json"),
    ],
)
def test_a_cut_short_output_is_a_parse_error(parse, sample: str) -> None:
    text = load(sample)
    with pytest.raises(ParseError) as exc:
        parse(text[: len(text) // 2])
    assert not exc.value.internal

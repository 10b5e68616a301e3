"""The host inventory checks (DIMMs, CPU, NVMe) judged on real-format samples against profiles."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.inventory import CpuInventory, MemoryInventory, NvmeHealthCheck
from burnin.result import Action, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
SCAN = "/dev/nvme0 -d nvme # /dev/nvme0, NVMe device\n"


def _run(check, text: str, *overrides: str, rc: int = 0):
    return judge(check, CommandOutput(stdout=text, rc=rc), apply_overrides(PROFILE, overrides))


def _nvme_output(device_json: str, scan: str = SCAN) -> str:
    return f"@@burnin-section scan\n{scan}@@burnin-section nvme0\n{device_json}"


def test_an_empty_slot_is_a_missing_dimm_named_by_slot_reseat_first() -> None:
    r = _run(
        MemoryInventory(), load("dmidecode_t_memory_4slots_1empty_SYNTHETIC.txt"), "hardware.dimm_count=4"
    )
    assert r.verdict is Verdict.FAIL
    (f,) = r.findings
    assert f.action is Action.RESEAT and f.subject == "DIMM_B1 (P0 CHANNEL B)" and "RMA" in f.message
    assert r.metrics["dimms"] == 3 and r.metrics["memory_gib"] == 192
    assert r.metrics["dimm_serials"] == ["80CE01234567", "80CE01234568", "80CE01234569"]


def test_dimms_of_the_wrong_size_or_speed_are_named_by_serial() -> None:
    text = load("dmidecode_t_memory_4slots_1empty_SYNTHETIC.txt")
    r = _run(MemoryInventory(), text, "hardware.dimm_count=3", "hardware.dimm_size_gib=32")
    assert r.verdict is Verdict.FAIL and {f.action for f in r.findings} == {Action.RMA}
    assert "DIMM_A1 (P0 CHANNEL A) (serial 80CE01234567)" in {f.subject for f in r.findings}
    slow = _run(MemoryInventory(), text, "hardware.dimm_count=3", "hardware.dimm_min_speed_mts=5600")
    assert slow.verdict is Verdict.FAIL and {f.action for f in slow.findings} == {Action.RECONFIGURE}
    ok = _run(MemoryInventory(), text, "hardware.dimm_count=3", "hardware.dimm_size_gib=64")
    assert ok.verdict is Verdict.PASS


def test_cpu_model_or_core_count_mismatch_fails() -> None:
    text = load("lscpu_amd_epyc_kvm_2cpu.txt")
    # The shipped profile orders 2x Xeon 8480 (112 cores): this 2-core EPYC is both wrong.
    r = _run(CpuInventory(), text)
    assert r.verdict is Verdict.FAIL
    assert [f.action for f in r.findings] == [Action.RMA, Action.RECONFIGURE]
    assert (
        _run(CpuInventory(), text, "hardware.cpu_model=epyc", "hardware.cpu_cores=2").verdict is Verdict.PASS
    )
    assert r.metrics["cores"] == 2 and r.metrics["cpu_model"] == "AMD EPYC"


def test_nvme_spare_below_threshold_and_critical_warning_are_rma() -> None:
    bad = load("smartctl_j_a_nvme_spare_below_threshold_SYNTHETIC.json")
    r = _run(NvmeHealthCheck(), _nvme_output(bad), "hardware.nvme_count=1", rc=10)
    assert r.verdict is Verdict.FAIL
    assert {f.action for f in r.findings} == {Action.RMA}
    assert all(f.subject == "/dev/nvme0 (serial deadbeef)" for f in r.findings)
    assert any("available spare below threshold" in f.message for f in r.findings)


def test_a_healthy_nvme_with_no_reported_capacity_is_unknown_not_pass() -> None:
    ok = load("smartctl_j_a_qemu_nvme_ok.json")
    r = _run(NvmeHealthCheck(), _nvme_output(ok), "hardware.nvme_count=1")
    assert r.verdict is Verdict.UNKNOWN and "no capacity" in r.reason
    r = _run(
        NvmeHealthCheck(),
        _nvme_output(ok.replace('"model_name"', '"nvme_total_capacity": 3840755982336,\n  "model_name"')),
        "hardware.nvme_count=1",
    )
    assert r.verdict is Verdict.PASS and r.metrics["nvme_serials"] == ["deadbeef"]


def test_a_missing_nvme_drive_fails_reseat() -> None:
    ok = load("smartctl_j_a_qemu_nvme_ok.json")
    r = _run(NvmeHealthCheck(), _nvme_output(ok), "hardware.nvme_count=2")
    assert r.verdict is Verdict.FAIL and r.findings[0].action is Action.RESEAT


def test_a_scanned_drive_with_no_output_is_unknown() -> None:
    ok = load("smartctl_j_a_qemu_nvme_ok.json")
    two = SCAN + "/dev/nvme1 -d nvme # /dev/nvme1, NVMe device\n"
    r = _run(NvmeHealthCheck(), _nvme_output(ok, two), "hardware.nvme_count=2")
    assert r.verdict is Verdict.UNKNOWN and "nvme1" in r.reason


def test_checks_do_not_run_on_a_profile_without_hardware_figures() -> None:
    profile = PROFILE.model_copy(update={"hardware": type(PROFILE.hardware)()})
    assert not any(c.applies(profile) for c in (MemoryInventory(), CpuInventory(), NvmeHealthCheck()))

"""pcie_links on an AMD profile (docs/burnin.md, "pcie"): the MI300X's GPUs are AMD's processing
accelerators (1002:74a1, class 0x1200, https://pci-ids.ucw.cz/read/PC/1002/74a1), numbered in bus
order as amd-smi numbers them, and judged like NVIDIA's: width at idle, speed under load."""

from __future__ import annotations

import json

from bringup.profiles.load import load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Severity, Verdict
from tests.profiles import SHIPPED_DIR, shipped

# The MI300X buses of the real 8x MI300 amd-smi xgmi (GPU0..7 in this order: bus order).
BUSES = ("0c", "22", "38", "5c", "9f", "af", "bf", "df")
MI300X = ("0x1002", "0x74a1", "0x120000")
H100 = ("0x10de", "0x2330", "0x030200")


def _mi300x():
    profile, problems = load_profile("mi300x-8x400g", SHIPPED_DIR)
    assert profile is not None, problems
    return profile


def _device(bus: str, ids: tuple[str, str, str], speed: str, **extra: object) -> dict:
    vendor, device, cls = ids
    return {
        "bdf": f"0000:{bus}:00.0",
        "vendor": vendor,
        "device": device,
        "class": cls,
        "current_link_speed": speed,
        "current_link_width": "16",
        "max_link_speed": "32.0 GT/s PCIe",
        "max_link_width": "16",
        "upstream": [],
        "names": {},
        **extra,
    }


def _nic(bus: str) -> dict:
    return _device(f"{int(bus, 16) + 1:02x}", ("0x15b3", "0x1021", "0x020700"), "32.0 GT/s PCIe")


def _output(ids=MI300X, load_speed: dict[str, str] | None = None) -> str:
    def doc(speed_of) -> str:
        devices = [_device(b, ids, speed_of(b)) for b in BUSES] + [_nic(b) for b in BUSES]
        return json.dumps({"devices": devices})

    idle = doc(lambda b: "2.5 GT/s PCIe")  # GPUs save power at idle
    load = doc(lambda b: (load_speed or {}).get(b, "32.0 GT/s PCIe"))
    stress = json.dumps({"tool": "burnin-stress", "error": None, "gpus": []})
    sections = {"idle": idle, "load1": load, "stress": stress, "after": load, "kernel": ""}
    return "".join(f"@@burnin-section {name}\n{text}\n" for name, text in sections.items())


def test_healthy_mi300x_links_pass_with_the_gpus_numbered_in_bus_order() -> None:
    result = judge(ALL_CHECKS["pcie_links"], CommandOutput(_output()), _mi300x())
    assert result.verdict is Verdict.PASS, (result.reason, result.findings)
    gpus = [(r["role"], r["bdf"]) for r in result.metrics["links"] if r["role"].startswith("GPU")]
    assert gpus == [(f"GPU {i}", f"0000:{b}:00.0") for i, b in enumerate(BUSES)]


def test_an_mi300x_gpu_slow_under_load_fails_on_its_amd_smi_index() -> None:
    result = judge(
        ALL_CHECKS["pcie_links"], CommandOutput(_output(load_speed={"5c": "2.5 GT/s PCIe"})), _mi300x()
    )
    assert result.verdict is Verdict.FAIL
    (finding,) = [f for f in result.findings if f.severity is Severity.CRITICAL]
    assert finding.subject == "GPU 3" and "0000:5c:00.0" in finding.message and "Gen1" in finding.message


def test_no_gpu_of_the_profiles_vendor_on_the_bus_fails_in_words_of_no_vendor() -> None:
    # H100s on an MI300X profile, or MI300Xs on an H100 one: the profile's GPUs are not there.
    for ids, profile in ((H100, _mi300x()), (MI300X, shipped())):
        result = judge(ALL_CHECKS["pcie_links"], CommandOutput(_output(ids)), profile)
        assert result.verdict is Verdict.FAIL
        assert [f.message for f in result.findings if f.severity is Severity.CRITICAL] == [
            f"no {profile.gpu.vendor.upper()} GPU on the PCIe bus"
        ]


def test_an_amd_device_of_another_class_is_no_gpu() -> None:
    # AMD's HDMI audio function (class 0x0403) sits beside a Radeon, never counted as a GPU.
    out = _output().replace('"class": "0x120000"', '"class": "0x040300"', 1)
    result = judge(ALL_CHECKS["pcie_links"], CommandOutput(out), _mi300x())
    roles = [r["role"] for r in result.metrics["links"] if r["role"].startswith("GPU")]
    assert len(roles) == 7 and "0000:0c:00.0" not in {r["bdf"] for r in result.metrics["links"]}

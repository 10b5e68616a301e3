"""A downtrained NIC in the PCIe stage is named by the VPD serial the idle sample read, so a vendor's
RMA desk can find the part."""

from __future__ import annotations

import json

from burnin.checks.base import CommandOutput, judge
from burnin.result import Severity
from tests.profiles import shipped

PROFILE = shipped()


def _vpd(serial: str) -> bytes:
    """A ConnectX-7's VPD as the PCI spec lays it out, with the fields lspci -vv printed for the real
    card in lspci_vv_cx7_downtrained_16gt_x8.txt (identifier string, PN, EC, SN, RV, end tag)."""

    def keyword(name: bytes, value: bytes) -> bytes:
        return name + bytes([len(value)]) + value

    name = b"NVIDIA ConnectX-7 Ethernet adapter card, 200 GbE , Dual-port QSFP112, PCIe 5.0 x16"
    ro = keyword(b"PN", b"MCX713106AC-VEAT") + keyword(b"EC", b"A5") + keyword(b"SN", serial.encode())
    ro += keyword(b"RV", b"\x00")
    return (
        bytes([0x82, len(name), 0]) + name + bytes([0x90, len(ro) & 0xFF, len(ro) >> 8]) + ro + bytes([0x78])
    )


def test_a_downtrained_nic_in_the_pcie_stage_is_named_by_its_vpd_serial(tmp_path, monkeypatch) -> None:
    from bringup.lab.standins.sysfs import build_fake_sysfs
    from burnin.checks.pcie import PcieLinks
    from burnin.onnode import pcie_collect

    tree = build_fake_sysfs(tmp_path, ("pcie-nic-downtrained",))  # mlx5_4 at 0000:98:00.0: 16 GT/s x8
    (tree / "bus" / "pci" / "devices" / "0000:98:00.0").resolve().joinpath("vpd").write_bytes(
        _vpd("MT2304XZ02VD")
    )
    monkeypatch.setattr(pcie_collect, "SYS", str(tree / "bus" / "pci"))
    monkeypatch.setenv("BURNIN_PCIE_VPD", "1")
    idle = json.dumps(pcie_collect.collect())
    monkeypatch.delenv("BURNIN_PCIE_VPD")
    load = json.dumps(pcie_collect.collect())  # under load: no VPD read again
    assert '"serial"' not in load
    out = f"@@burnin-section idle\n{idle}\n@@burnin-section load1\n{load}\n@@burnin-section after\n{load}\n"
    result = judge(PcieLinks(), CommandOutput(stdout=out), PROFILE)
    nic = [f for f in result.findings if f.severity is Severity.CRITICAL and f.subject == "mlx5_4"]
    assert nic and all("serial MT2304XZ02VD" in f.message for f in nic), result.findings
    others = [f for f in result.findings if f.subject != "mlx5_4"]
    assert not any("serial" in f.message for f in others)  # the lab tree's other cards have no VPD

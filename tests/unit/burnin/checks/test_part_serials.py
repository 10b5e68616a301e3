"""A failing GPU or HCA is named by its serial / node GUID, so a vendor's RMA desk can find the part
(for RMA): the GPU checks put nvidia-smi's 'Serial Number' in the message and the metrics,
the IB check ibstat's 'Node GUID'."""

from __future__ import annotations

import json

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu import GpuInventory, GpuMemoryHealth, GpuVersions
from burnin.checks.ib import IbPorts
from burnin.checks.pcie_lspci import LspciLinks
from burnin.parsers.ibstat import parse_ibstat
from burnin.parsers.lspci import parse_lspci_vv
from burnin.parsers.nvidia_smi import parse_query
from burnin.result import Severity, Verdict
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()


def test_a_failing_gpu_is_named_by_its_serial() -> None:
    text = load("nvidia_smi_q_a10_remapped_rows_pending.txt")
    serials = [g.serial for g in parse_query(text).gpus]
    assert serials and all(serials)
    result = judge(GpuMemoryHealth(), CommandOutput(stdout=text), PROFILE)
    assert result.verdict is not Verdict.PASS
    critical = [f for f in result.findings if f.severity is Severity.CRITICAL]
    assert critical and all(f"serial {serials[0]}" in f.message for f in critical)


def test_gpu_inventory_records_every_serial() -> None:
    text = load("nvidia_smi_q_8xh100_535_183.txt")
    result = judge(GpuInventory(), CommandOutput(stdout=text), PROFILE)
    assert result.metrics["serials"] == [g.serial for g in parse_query(text).gpus]
    assert len(result.metrics["serials"]) == 8


def test_a_down_ib_port_is_named_by_its_hca_node_guid() -> None:
    # The lab's 8x CX-7 NDR recording with mlx5_6 down (the corpus's H100 ibstat samples are Ethernet).
    text = (
        REPO / "bringup/lab/standins/samples/ibstat_8xh100_cx7_ndr_ib_mlx5_6_down_polling_DERIVED.txt"
    ).read_text()
    text = text.split("\n", 1)[1]
    hcas = {h.name: h.node_guid for h in parse_ibstat(text).hcas}
    result = judge(IbPorts(), CommandOutput(stdout=text, rc=0), apply_overrides(PROFILE, ()))
    down = [f for f in result.findings if f.severity is Severity.CRITICAL and " port " in f.subject]
    assert down
    for f in down:
        guid = hcas[f.subject.split()[0]]
        assert guid and f"node GUID {guid}" in f.message and f"Node GUID: {guid}" in f.evidence
    assert result.metrics["node_guids"] == {
        n: g for n, g in hcas.items() if g and n in result.metrics["node_guids"]
    }


def test_a_gpu_on_another_vbios_than_its_siblings_is_named_by_its_serial() -> None:
    # The lab's gpu-vbios-old recording: GPU 3 (00000000:86:00.0) on 96.00.30.00.01, the rest on
    # 96.00.74.00.01. Without a VBIOS pin the odd one out is the part to look at.
    text = (
        REPO / "bringup/lab/standins/samples/nvidia_smi_q_8xh100_535_183_gpu3_vbios_old_DERIVED.txt"
    ).read_text()
    text = text.split("\n", 1)[1]
    result = judge(GpuVersions(), CommandOutput(stdout=text), PROFILE)
    assert result.verdict is Verdict.WARN
    (f,) = result.findings
    assert f.subject == "GPU 3" and "serial 1654522012479" in f.message and "96.00.30.00.01" in f.message
    assert f.evidence == "VBIOS Version : 96.00.30.00.01"
    pinned = judge(
        GpuVersions(), CommandOutput(stdout=text), apply_overrides(PROFILE, ["pins.vbios=96.00.74.00.01"])
    )
    (f,) = pinned.findings
    assert pinned.verdict is Verdict.FAIL and f.subject == "GPU 3" and "serial 1654522012479" in f.message


def test_a_downtrained_hca_in_lspci_is_named_by_its_vpd_serial() -> None:
    # lspci -vv prints the card's Vital Product Data: '[SN] Serial number: MT2304XZ02VD'.
    text = load("lspci_vv_cx7_downtrained_16gt_x8.txt")
    result = judge(LspciLinks(), CommandOutput(stdout=text), PROFILE)
    assert result.verdict is Verdict.FAIL
    critical = [f for f in result.findings if f.severity is Severity.CRITICAL]
    assert critical and all("serial MT2304XZ02VD" in f.subject for f in critical)
    assert [d.serial for d in parse_lspci_vv(load("lspci_vv_cx7_gen5_x16_ok.txt"))] == ["MT2340J88735"]


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

"""lspci -vv parser on the real captures (tests/fixtures/samples/index.tsv)."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.lspci import parse_lspci_vv


@pytest.mark.parametrize(
    ("name", "bdf", "cap", "sta", "states", "driver"),
    [
        ("lspci_vv_h100_gpu_gen5_x16_ok.txt", "0000:19:00.0", (32.0, 16), (32.0, 16), ("ok", "ok"), "nvidia"),
        ("lspci_vv_cx7_gen5_x16_ok.txt", "0000:1a:00.0", (32.0, 16), (32.0, 16), ("ok", "ok"), "mlx5_core"),
        (
            "lspci_vv_cx7_downtrained_16gt_x8.txt",
            "0000:b1:00.1",
            (32.0, 16),
            (16.0, 8),
            ("downgraded", "downgraded"),
            "mlx5_core",
        ),
        (
            "lspci_vv_pcie_switch_port_speed_downgraded_benign.txt",
            "0000:17:00.0",
            (32.0, 4),
            (16.0, 4),
            ("downgraded", "ok"),
            "pcieport",
        ),
    ],
)
def test_device_blocks(sample, name, bdf, cap, sta, states, driver):
    (dev,) = parse_lspci_vv(sample(name))
    assert dev.bdf == bdf
    assert (dev.link_cap_speed_gts, dev.link_cap_width) == cap
    assert (dev.link_sta_speed_gts, dev.link_sta_width) == sta
    assert (dev.link_sta_speed_state, dev.link_sta_width_state) == states
    assert dev.downgraded == ("downgraded" in states)
    assert dev.kernel_driver == driver


def test_cx7_downtrained_details(sample):
    (dev,) = parse_lspci_vv(sample("lspci_vv_cx7_downtrained_16gt_x8.txt"))
    assert dev.class_name == "Ethernet controller"
    assert "ConnectX-7" in dev.description
    assert dev.express_type == "Endpoint"
    assert dev.devsta["CorrErr"] is True and dev.devsta["FatalErr"] is False
    assert dev.ce_status["AdvNonFatalErr"] is True and dev.ce_status["RxErr"] is False
    assert dev.numa_node == 1


def test_h100_correctable_error_status(sample):
    (dev,) = parse_lspci_vv(sample("lspci_vv_h100_gpu_gen5_x16_ok.txt"))
    assert dev.class_name == "3D controller" and dev.express_type == "Endpoint"
    assert dev.devsta["CorrErr"] is True
    assert {k for k, v in dev.ce_status.items() if v} == {"RxErr", "BadTLP", "Timeout"}
    assert not any(dev.ue_status.values())


def test_switch_port_slot(sample):
    (dev,) = parse_lspci_vv(sample("lspci_vv_pcie_switch_port_speed_downgraded_benign.txt"))
    assert dev.express_type == "Downstream Port"
    assert dev.slot_number == 167
    assert dev.class_name == "PCI bridge"


def test_grepped_excerpt_without_header(sample):
    devices = parse_lspci_vv(sample("lspci_gpu_lnksta_downgraded_2_5gt_x8_with_nvsmi.txt"))
    assert len(devices) == 1
    dev = devices[0]
    assert dev.bdf is None
    assert (dev.link_cap_speed_gts, dev.link_cap_width) == (16.0, 16)
    assert (dev.link_sta_speed_gts, dev.link_sta_width) == (2.5, 8)
    assert dev.downgraded


def test_nn_ids_physical_slot_and_old_pciutils_without_markers():
    text = (
        "0000:19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
        "\tPhysical Slot: 3\n"
        "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 8GT/s, Width x16, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
        "\n"
        "0000:1a:00.0 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
        "\t\tLnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)\n"
    )
    gpu, nic = parse_lspci_vv(text)
    assert (gpu.vendor_id, gpu.device_id, gpu.physical_slot) == ("10de", "2330", "3")
    assert gpu.class_name == "3D controller"
    assert (gpu.link_sta_speed_gts, gpu.link_sta_speed_state, gpu.downgraded) == (8.0, None, False)
    assert (nic.vendor_id, nic.device_id) == ("15b3", "1021")
    assert (nic.link_sta_speed_gts, nic.link_sta_width, nic.downgraded) == (None, 0, True)


@pytest.mark.parametrize("text", ["", "lspci: command not found\n", "pcilib: Cannot open /proc/bus/pci\n"])
def test_not_lspci(text):
    with pytest.raises(ParseError):
        parse_lspci_vv(text)

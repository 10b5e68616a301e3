"""GPU and PCIe device records (bringup/redfish/devices.py), on documents of the captured trees."""

from __future__ import annotations

from bringup.redfish import devices
from tests.unit.bringup.redfish.fixture_trees import fixture

R = "/redfish/v1"


def test_a_gpu_processor_is_recorded_and_a_cpu_is_not():
    tree = fixture("supermicro-gb300")
    gpu = devices.gpu_from_processor(tree[f"{R}/Systems/HGX_Baseboard_0/Processors/GPU_3"], "HGX_Baseboard_0")
    assert gpu["slot"] == "HGX_Chassis_0/ProcessorModule_1/GPU_1" and gpu["uuid"] == "gpu-3-uuid"
    assert (gpu["health"], gpu["state"], gpu["part_number"]) == ("Warning", "InTest", "31C2-893-A1")
    assert devices.gpu_from_processor(tree[f"{R}/Systems/HGX_Baseboard_0/Processors/CPU_0"], "x") is None


def test_hpe_devices_typed_gpu_that_are_not_gpus_are_left_out():
    tree = fixture("hpe-xl675d-a100")
    by_name = {d.get("Name"): d for p, d in tree.items() if "/Chassis/1/Devices/" in p}
    assert devices.gpu_from_hpe_device(by_name["NVIDIA NV Switch"]) is None
    assert devices.gpu_from_hpe_device(by_name["NVIDIA HGX A100 8 GPU 40"]) is None
    assert devices.gpu_from_hpe_device(by_name["Empty slot 17"]) is None
    gpu = devices.gpu_from_hpe_device(tree[f"{R}/Chassis/1/Devices/9"])
    assert (gpu["slot"], gpu["serial"], gpu["firmware"]) == (
        "PCI-E Slot 1",
        "1323620023536",
        "92.00.19.00.10",
    )


def test_gpus_listed_twice_are_kept_once_in_slot_order():
    a = {"id": "GPU_0", "system": "S", "slot": "Slot 10", "uuid": "u1", "serial": "1"}
    b = {"id": "GPU_0", "system": "B", "slot": "Slot 10", "uuid": "u1", "serial": "1"}
    c = {"id": "GPU_1", "system": "S", "slot": "Slot 9", "uuid": None, "serial": None}
    assert devices.merge_gpus([a, b, c]) == [c, a]


def test_a_pcie_device_takes_class_and_ids_from_its_first_function():
    tree = fixture("gigabyte-h262-z63-ami")
    record = devices.pcie_device(
        tree[f"{R}/Chassis/Self/PCIeDevices/1"], [tree[f"{R}/Chassis/Self/PCIeDevices/1/PCIeFunctions/1"]]
    )
    assert (record["class"], record["vendor_id"], record["functions"], record["slot"]) == (
        "NetworkController",
        "0x15b3",
        1,
        "Slot 17",
    )

"""The lab BMC's hardware inventory: what sushy-tools' fake driver lacks and discovery reads
(bringup/redfish/hardware.py): Memory, Processors, Storage drives, Bios attributes, Chassis Power.

The parts are the lab node's as its stand-in tools show them, so the BMC and the node agree:
the DIMMs are the stand-in dmidecode recording's (bringup/lab/standins/samples), slot names and
serials included; the NVMe drives are the smartctl recording's model and capacity; the CPUs are
the system's ``cpu_model``/``cpu_count``. Every DIMM slot is listed, an empty one with
``Status.State: Absent`` (as iLO and Supermicro do), so a missing DIMM is named by its slot.

BMC-side faults (the node's fault spec; names in standins/catalog.json):

- ``bmc-dimm-missing``: Memory shows CPU0_DIMM_C2 absent, the slot the node-side
  ``dimm-missing`` empties. The node-side fault implies this one: a DIMM that is not there is
  missing to dmidecode and to the BMC alike, so ``dimm-missing`` alone makes both agree;
  ``bmc-dimm-missing`` alone is the BMC's view only (dmidecode still sees 32).
- ``bmc-psu-failed``: power supply 3 reports ``Status.Health: Critical`` and
  ``State: UnavailableOffline``.

The GPUs are listed among the Processors (``ProcessorType: GPU``, as iDRAC 9 lists an XE9680's
and as an HGX baseboard system lists its own: tests/fixtures/redfish/supermicro-gb300), one per
GPU of the stand-in ``nvidia-smi -q`` recording, in bus order, with its serial, UUID and VBIOS and
the slot ``GPU.SXM.<n>`` (``driver-version-wrong``'s recording is another machine's: its GPUs are
listed then). The node-side ``gpu-missing`` fault takes GPU 4 off nvidia-smi only:
the BMC still lists it (slot GPU.SXM.5), as a BMC does for a GPU fallen off the bus.

A node of another platform (the system's ``platform``, a profile name) lists the GPUs of its
platform's recording: the catalog's ``bmc`` section names it and its format (``nvidia-smi-q`` or
``amd-smi-static``; standins/catalog_file.py), so the BMC and the node show one machine.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from bringup.lab.standins import SAMPLES_DIR, catalog
from burnin.parsers.amd_smi import parse_static
from burnin.parsers.hardware import Dimm, parse_dmidecode_memory
from burnin.parsers.nvidia_smi import parse_query

BMC_FAULTS = frozenset({"bmc-dimm-missing", "bmc-psu-failed"})
_DIMMS_OK = "dmidecode_t_memory_2s_32x64gb_ddr5_SYNTHETIC.txt"
_DIMMS_MISSING = "dmidecode_t_memory_2s_32x64gb_ddr5_cpu0_dimm_c2_missing_SYNTHETIC.txt"
_SMARTCTL = "smartctl_j_a_nvme_3_84tb_u2_SYNTHETIC.json"
_SMI_QUERY = "nvidia_smi_q_8xh100_535_183.txt"
# Node-side faults whose nvidia-smi -q is another machine's capture (standins/catalog.json): the
# BMC lists that machine's GPUs, as the node's own BMC would.
_OTHER_MACHINE = {"driver-version-wrong": "nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt"}
NVME_COUNT = 10  # smartctl --scan of the stand-ins lists 10 controllers
PSU_COUNT, FAILED_PSU = 6, 3  # an XE9680: six 2800 W supplies, 3+3
BIOS_ATTRIBUTES = {
    "SriovGlobalEnable": "Enabled",
    "ProcVirtualization": "Enabled",
    "SysProfile": "PerfOptimized",
    "LogicalProc": "Enabled",
    "BootMode": "Uefi",
}


def _sample(name: str) -> str:
    return (SAMPLES_DIR / name).read_text(encoding="utf-8").partition("\n")[2]  # line 1: # SOURCE


@cache
def _dimms(missing: bool) -> tuple[Dimm, ...]:
    return tuple(parse_dmidecode_memory(_sample(_DIMMS_MISSING if missing else _DIMMS_OK)))


def _recording(faults: set[str], platform: str | None = None) -> tuple[str, str]:
    """(sample, format) the BMC lists the node's GPUs from."""
    bmc = catalog(platform).get("bmc") or {}
    if "gpu_sample" in bmc:
        return bmc["gpu_sample"], bmc.get("gpu_format", "nvidia-smi-q")
    other = next((sample for fault, sample in _OTHER_MACHINE.items() if fault in faults), _SMI_QUERY)
    return other, "nvidia-smi-q"


@cache
def _gpus(recording: str = _SMI_QUERY, form: str = "nvidia-smi-q") -> tuple[dict[str, Any], ...]:
    """(slot, maker, model, serial, UUID, VBIOS) of a stand-in recording's GPUs."""
    if form == "amd-smi-static":
        return tuple(
            {
                "id": f"OAM.{n}",  # AMD's UBB names its GPU sites OAM (Open Accelerator Module)
                "maker": "AMD",
                "model": f"AMD Instinct {g.market_name}" if g.market_name else None,
                "serial": g.serial,
                "uuid": None,
                "vbios": g.vbios,
            }
            for n, g in enumerate(parse_static(_sample(recording)), 1)
        )
    if form != "nvidia-smi-q":
        raise ValueError(f"bmc gpu_format must be nvidia-smi-q or amd-smi-static, got {form!r}")
    q = parse_query(_sample(recording))
    return tuple(
        {
            "id": f"GPU.SXM.{n}",
            "maker": "NVIDIA",
            "model": g.product_name,
            "serial": g.serial,
            "uuid": (g.uuid or "").removeprefix("GPU-") or None,
            "vbios": g.vbios_version,
        }
        for n, g in enumerate(q.gpus, 1)
    )


def _gpu_doc(path: str, gpu: dict[str, Any]) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "@odata.type": "#Processor.v1_18_0.Processor",
        "Id": gpu["id"],
        "Name": gpu["id"],
        "ProcessorType": "GPU",
        "Manufacturer": gpu["maker"],
        "Model": gpu["model"],
        "SerialNumber": gpu["serial"],
        "UUID": gpu["uuid"],
        "FirmwareVersion": gpu["vbios"],
        "Location": {"PartLocation": {"ServiceLabel": gpu["id"], "LocationType": "Embedded"}},
        "Status": _status(),
    }


@cache
def _nvme() -> dict[str, Any]:
    data = json.loads(_sample(_SMARTCTL))
    return {"model": data.get("model_name"), "bytes": (data.get("user_capacity") or {}).get("bytes")}


def _status(health: str = "OK", state: str = "Enabled") -> dict[str, str]:
    return {"Health": health, "State": state}


def _collection(path: str, kind: str, ids: list[str]) -> dict[str, Any]:
    return {
        "@odata.id": path,
        "@odata.type": f"#{kind}Collection.{kind}Collection",
        "Name": f"{kind} Collection",
        "Members": [{"@odata.id": f"{path}/{i}"} for i in ids],
        "Members@odata.count": len(ids),
    }


def _dimm_doc(path: str, dimm: Dimm) -> dict[str, Any]:
    present = dimm.size_mib > 0
    doc: dict[str, Any] = {
        "@odata.id": path,
        "@odata.type": "#Memory.v1_17_0.Memory",
        "Id": dimm.locator,
        "Name": dimm.locator,
        "DeviceLocator": dimm.locator,
        "CapacityMiB": dimm.size_mib,
        "Status": _status() if present else _status(state="Absent"),
    }
    if present:
        doc.update(
            {
                "MemoryDeviceType": "DDR5",
                "OperatingSpeedMhz": dimm.configured_speed_mts or dimm.speed_mts,
                "Manufacturer": dimm.manufacturer,
                "PartNumber": dimm.part_number,
                "SerialNumber": dimm.serial,
            }
        )
    return doc


def _psu(system: dict[str, Any], n: int, failed: bool) -> dict[str, Any]:
    return {
        "@odata.id": f"/redfish/v1/Chassis/{system['uuid']}/Power#/PowerSupplies/{n - 1}",
        "MemberId": str(n - 1),
        "Name": f"PS{n} Status",
        "Model": "PWR SPLY,2800W,RDNT,LTON",
        "Manufacturer": "DELL",
        "SerialNumber": f"CN{system['serial'][-6:]}PS{n}",
        "FirmwareVersion": "00.1D.7D",
        "PowerCapacityWatts": 2800,
        "PowerSupplyType": "AC",
        "Oem": {"Dell": {"DellPowerSupply": {"Id": f"PSU.Slot.{n}"}}},  # iDRAC's name for the bay
        "Status": _status("Critical", "UnavailableOffline") if failed else _status(),
    }


def inventory_resource(tail: list[str], system: dict[str, Any]) -> dict[str, Any] | None:
    """The resource at ``/redfish/v1/<tail>`` for ``system``, or None (not one of these)."""
    faults = set(system.get("faults") or ())
    uuid = system["uuid"]
    if tail[:2] == ["Chassis", uuid] and tail[2:] == ["Power"]:
        return {
            "@odata.id": f"/redfish/v1/Chassis/{uuid}/Power",
            "@odata.type": "#Power.v1_6_1.Power",
            "Id": "Power",
            "Name": "Power",
            "PowerSupplies": [
                _psu(system, n, n == FAILED_PSU and "bmc-psu-failed" in faults)
                for n in range(1, PSU_COUNT + 1)
            ],
        }
    if tail[:2] != ["Systems", uuid] or len(tail) < 3:
        return None
    base, rest = f"/redfish/v1/Systems/{uuid}", tail[2:]
    if rest[0] == "Memory":
        dimms = {d.locator: d for d in _dimms(bool(faults & {"dimm-missing", "bmc-dimm-missing"}))}
        if len(rest) == 1:
            return _collection(f"{base}/Memory", "Memory", list(dimms))
        dimm = dimms.get(rest[1]) if len(rest) == 2 else None
        return _dimm_doc(f"{base}/Memory/{rest[1]}", dimm) if dimm else None
    if rest[0] == "Processors":
        ids = [f"CPU.Socket.{i}" for i in range(1, int(system.get("cpu_count") or 2) + 1)]
        gpus = {g["id"]: g for g in _gpus(*_recording(faults, system.get("platform")))}
        if len(rest) == 1:
            return _collection(f"{base}/Processors", "Processor", ids + list(gpus))
        if len(rest) == 2 and rest[1] in gpus:
            return _gpu_doc(f"{base}/Processors/{rest[1]}", gpus[rest[1]])
        if len(rest) == 2 and rest[1] in ids:
            return {
                "@odata.id": f"{base}/Processors/{rest[1]}",
                "@odata.type": "#Processor.v1_9_0.Processor",
                "Id": rest[1],
                "Socket": rest[1],
                "ProcessorType": "CPU",
                "Model": system.get("cpu_model"),
                "TotalCores": 56,
                "TotalThreads": 112,
                "Status": _status(),
            }
        return None
    if rest[0] == "Storage":
        drives = [f"Disk.Bay.{i}:Enclosure.Internal.0-1" for i in range(NVME_COUNT)]
        ctl = f"{base}/Storage/CPU.1"
        if len(rest) == 1:
            return _collection(f"{base}/Storage", "Storage", ["CPU.1"])
        if rest[1:] == ["CPU.1"]:
            return {
                "@odata.id": ctl,
                "@odata.type": "#Storage.v1_8_1.Storage",
                "Id": "CPU.1",
                "Name": "CPU.1",
                "Drives": [{"@odata.id": f"{ctl}/Drives/{d}"} for d in drives],
                "Drives@odata.count": len(drives),
                "Status": _status(),
            }
        if len(rest) == 4 and rest[1:3] == ["CPU.1", "Drives"] and rest[3] in drives:
            bay = drives.index(rest[3])
            return {
                "@odata.id": f"{ctl}/Drives/{rest[3]}",
                "@odata.type": "#Drive.v1_9_0.Drive",
                "Id": rest[3],
                "Name": f"PCIe SSD in Slot {bay} in Bay 1",
                "Model": _nvme()["model"],
                "CapacityBytes": _nvme()["bytes"],
                "Protocol": "NVMe",
                "MediaType": "SSD",
                "SerialNumber": f"S64HNE0T{system['serial'][-4:]}{bay:02d}",
                "PhysicalLocation": {"PartLocation": {"LocationOrdinalValue": bay, "LocationType": "Slot"}},
                "Status": _status(),
            }
        return None
    if rest == ["BIOS"]:
        return {
            "@odata.id": f"{base}/BIOS",
            "@odata.type": "#Bios.v1_0_0.Bios",
            "Id": "BIOS",
            "Name": "BIOS Configuration Current Settings",
            "Attributes": dict(BIOS_ATTRIBUTES),
        }
    return None

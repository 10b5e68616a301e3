"""The lab BMC's hardware inventory (bringup/lab/bmc_inventory.py) read by the same parsers
discovery uses: the node's stand-in recordings and the BMC agree, and the BMC-side faults
change exactly one part. The real sushy-tools run is tests/lab/test_hardware_inventory_lab.py."""

from __future__ import annotations

import pytest

from bringup.lab.bmc_inventory import BMC_FAULTS, inventory_resource
from bringup.lab.standins import SAMPLES_DIR, known_faults
from bringup.redfish import hardware
from burnin.parsers.hardware import parse_dmidecode_memory

UUID = "9b1f0d1e-0000-4000-8000-000000000001"


def system(*faults: str) -> dict:
    return {
        "uuid": UUID,
        "serial": "LABABC123001",
        "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
        "cpu_count": 2,
        "faults": list(faults),
    }


def get(sys: dict, path: str) -> dict | None:
    return inventory_resource(path.strip("/").split("/")[2:], sys)


def dimms(sys: dict) -> list[dict]:
    collection = get(sys, f"/redfish/v1/Systems/{UUID}/Memory")
    return [hardware.parse_dimm(get(sys, m["@odata.id"])) for m in collection["Members"]]


def test_memory_is_the_stand_in_dmidecode_recording():
    text = (SAMPLES_DIR / "dmidecode_t_memory_2s_32x64gb_ddr5_SYNTHETIC.txt").read_text().partition("\n")[2]
    node_side = parse_dmidecode_memory(text)
    bmc_side = dimms(system())
    assert [(d["slot"], d["serial"], d["size_gib"]) for d in bmc_side] == [
        (d.locator, d.serial, d.size_mib / 1024) for d in node_side
    ]


@pytest.mark.parametrize("fault", ["bmc-dimm-missing", "dimm-missing"])
def test_a_missing_dimm_is_absent_in_its_slot(fault):
    absent = [d for d in dimms(system(fault)) if not d["present"]]
    assert [(d["slot"], d["state"], d["size_gib"]) for d in absent] == [("CPU0_DIMM_C2", "Absent", None)]


def test_bmc_psu_failed_fails_supply_3_only():
    ok, _ = hardware.parse_power(get(system(), f"/redfish/v1/Chassis/{UUID}/Power"))
    failed, _ = hardware.parse_power(get(system("bmc-psu-failed"), f"/redfish/v1/Chassis/{UUID}/Power"))
    assert [p["health"] for p in ok] == ["OK"] * 6
    assert [(p["slot"], p["health"], p["state"]) for p in failed if p["health"] != "OK"] == [
        ("PSU.Slot.3", "Critical", "UnavailableOffline")
    ]


def test_other_systems_paths_and_unknown_resources_are_not_served():
    assert get(system(), "/redfish/v1/Systems/another-uuid/Memory") is None
    assert get(system(), f"/redfish/v1/Systems/{UUID}/Memory/NO_SUCH_SLOT") is None
    assert get(system(), f"/redfish/v1/Systems/{UUID}/EthernetInterfaces") is None  # sushy's own


def test_the_bmc_faults_are_in_the_catalog():
    assert set(known_faults()) >= BMC_FAULTS


def test_the_gpus_are_the_stand_in_nvidia_smi_recordings_and_discovery_reads_them():
    """Eight H100s among the Processors, serials and UUIDs those nvidia-smi -q shows, in bus order;
    the CPUs stay the inventory's processors."""
    from bringup.redfish.devices import gpu_from_processor
    from burnin.parsers.nvidia_smi import parse_query

    text = (SAMPLES_DIR / "nvidia_smi_q_8xh100_535_183.txt").read_text().partition("\n")[2]
    node_side = parse_query(text).gpus
    members = get(system(), f"/redfish/v1/Systems/{UUID}/Processors")["Members"]
    docs = [get(system(), m["@odata.id"]) for m in members]
    gpus = [g for g in (gpu_from_processor(d, UUID) for d in docs) if g]
    assert [(g["slot"], g["serial"], f"GPU-{g['uuid']}") for g in gpus] == [
        (f"GPU.SXM.{n}", q.serial, q.uuid) for n, q in enumerate(node_side, 1)
    ]
    assert gpus[4]["serial"] == "1654922016523"  # GPU 4 at 00000000:97:00.0, the one gpu-missing takes away
    assert len([p for p in map(hardware.parse_processor, docs) if p is not None]) == 2


def _smi_q_recordings() -> dict[str, str]:
    """Fault -> the nvidia-smi -q recording the node's stand-in prints with it (catalog.json)."""
    import json

    from bringup.lab.standins import PACKAGE_DIR

    entries = json.loads((PACKAGE_DIR / "catalog.json").read_text())["tools"]["nvidia-smi"]
    return {
        fault: e["output"][0]["sample"]
        for e in entries
        if "-q" in e["args"] and e.get("faults")
        for fault in e["faults"]
    }


@pytest.mark.parametrize("fault", sorted(_smi_q_recordings()))
def test_every_gpu_a_lab_node_shows_is_one_its_bmc_lists(fault):
    """The node and its BMC are one machine: whatever recording a fault gives nvidia-smi -q (another
    node's capture, for driver-version-wrong), the BMC lists the GPUs it shows (a GPU the node
    lost, gpu-missing, stays listed: that is the fault)."""
    from bringup.redfish.devices import gpu_from_processor
    from burnin.parsers.nvidia_smi import parse_query

    text = (SAMPLES_DIR / _smi_q_recordings()[fault]).read_text().partition("\n")[2]
    shown = {g.serial for g in parse_query(text).gpus}
    sys = system(fault)
    members = get(sys, f"/redfish/v1/Systems/{UUID}/Processors")["Members"]
    listed = {g["serial"] for m in members if (g := gpu_from_processor(get(sys, m["@odata.id"]), UUID))}
    assert shown <= listed, sorted(shown - listed)

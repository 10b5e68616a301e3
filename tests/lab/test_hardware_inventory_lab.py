"""The hardware inventory at discovery against the lab's real sushy-tools BMCs (the
Redfish half): Memory, Processors, Storage, BIOS attributes and Chassis Power as the lab BMC
serves them (bringup/lab/bmc_inventory.py), the BMC-side faults bmc-dimm-missing and
bmc-psu-failed, and the node-side dimm-missing that implies the BMC's view; then the lab's order
(inventories/deliveries/lab.yml) compared with what each BMC reported.

Like tests/lab/test_bmc.py, the emulator listens on loopback addresses: no root, no namespaces.
"""

from __future__ import annotations

import os
import random
import uuid

import pytest

from bringup.fleet.models import Node
from bringup.inventory.delivery import load_delivery
from bringup.lab.bmc import BmcEmulator, BmcSystem, bmc_url
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from burnin.accept.conformance import compare_node
from burnin.result import Action
from tests.conftest import unavailable
from tests.lab.test_bmc import _free_port
from tests.paths import REPO

pytestmark = pytest.mark.lab

USER, PASSWORD = "root", "inventory-lab-secret"
FAULTS = {
    "node01": [],
    "node02": ["bmc-dimm-missing"],
    "node03": ["bmc-psu-failed"],
    "node04": ["dimm-missing"],
}


@pytest.fixture(scope="module")
def bmcs(tmp_path_factory):
    try:
        import sushy_tools  # noqa: F401
    except ImportError:
        unavailable("sushy-tools is not installed (pip install -e '.[lab]')")
    rnd = random.Random(os.urandom(8))
    net = f"127.{rnd.randint(1, 254)}.{rnd.randint(0, 255)}"
    systems = [
        BmcSystem(
            name=name,
            uuid=str(uuid.uuid4()),
            serial=f"LAB{rnd.randint(0, 0xFFFFFF):06X}{i}",
            macs=[f"02:aa:bb:dd:{i:02x}:01"],
            address=f"{net}.{i}",
            faults=faults,
        )
        for i, (name, faults) in enumerate(FAULTS.items(), start=1)
    ]
    port = _free_port([s.address for s in systems])
    emulator = BmcEmulator(systems, port, tmp_path_factory.mktemp("bmc"), USER, PASSWORD)
    emulator.start()
    try:
        found = {}
        for s in systems:
            endpoint = BmcEndpoint(s.name, bmc_url(s.address, port), USER, PASSWORD)
            found[s.name] = (s, discover_endpoint(endpoint, TransportOptions(retries=0)).hardware)
        yield found
    finally:
        emulator.stop()


def test_a_healthy_lab_bmc_reports_the_lab_nodes_hardware(bmcs):
    _, hw = bmcs["node01"]
    inv = hw["inventory"]
    assert inv["not_reported"] == {}
    assert len(inv["memory"]) == 32 and all(d["present"] for d in inv["memory"])
    assert {(d["size_gib"], d["speed_mts"], d["type"]) for d in inv["memory"]} == {(64.0, 4800, "DDR5")}
    # The same slots and serials as the stand-in dmidecode prints.
    assert inv["memory"][0]["slot"] == "CPU0_DIMM_A1" and inv["memory"][0]["serial"] == "80CE02410000"
    assert [(c["socket"], c["model"], c["cores"]) for c in inv["processors"]] == [
        ("CPU.Socket.1", "Intel(R) Xeon(R) Platinum 8480+", 56),
        ("CPU.Socket.2", "Intel(R) Xeon(R) Platinum 8480+", 56),
    ]
    assert len(inv["drives"]) == 10 and {d["capacity_gb"] for d in inv["drives"]} == {3840.8}
    assert [(p["slot"], p["health"]) for p in inv["power_supplies"]] == [
        (f"PSU.Slot.{n}", "OK") for n in range(1, 7)
    ]
    assert inv["fans"] and all(f["health"] == "OK" for f in inv["fans"])  # sushy-tools' own Thermal
    assert inv["bios_attributes"]["SriovGlobalEnable"] == "Enabled"


def test_bmc_dimm_missing_shows_the_slot_absent(bmcs):
    for name in ("node02", "node04"):  # bmc-dimm-missing, and dimm-missing which implies it
        _, hw = bmcs[name]
        absent = [d for d in hw["inventory"]["memory"] if not d["present"]]
        assert [(d["slot"], d["state"]) for d in absent] == [("CPU0_DIMM_C2", "Absent")], name
        assert len(hw["inventory"]["memory"]) == 32


def test_bmc_psu_failed_shows_one_supply_critical(bmcs):
    system, hw = bmcs["node03"]
    failed = [p for p in hw["inventory"]["power_supplies"] if p["health"] != "OK"]
    assert [(p["slot"], p["health"], p["state"]) for p in failed] == [
        ("PSU.Slot.3", "Critical", "UnavailableOffline")
    ]
    assert failed[0]["serial"] == f"CN{system.serial[-6:]}PS3"


def test_the_lab_order_against_each_lab_bmc(bmcs):
    delivery = load_delivery("lab", REPO / "inventories")
    outcome = {}
    for name, (system, hw) in bmcs.items():
        node = Node(
            name=name,
            serial=system.serial,
            profile="h100-sxm-8x400g",
            rack="lab",
            state="discovered",
            hardware=hw,
        )
        conf = compare_node(delivery, node, [])  # BMC data alone: the node-side parts are not compared
        outcome[name] = [(m.part, m.slot, m.action) for m in conf.mismatches if m.action is not None]
        unknown = {m.part for m in conf.mismatches if m.action is None}
        assert unknown == {"gpu", "nic MT4129"}, (name, unknown)  # nvidia-smi and ibstat never ran
    assert outcome == {
        "node01": [],
        "node02": [("memory", "CPU0_DIMM_C2", Action.RESEAT)],
        "node03": [("psu", "PSU.Slot.3", Action.RMA)],
        "node04": [("memory", "CPU0_DIMM_C2", Action.RESEAT)],
    }

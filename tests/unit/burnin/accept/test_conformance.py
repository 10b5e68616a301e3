"""The order against what arrived, node by node and part by part (burnin/accept/conformance.py).

The node records come from a real discovery of a Supermicro X13-shaped BMC over HTTP
(tests/fixtures/redfish/hardware/) and the check results from the real checks judging real
tool outputs (nvidia-smi -q, ibstat, dmidecode), so what is compared is what the store holds."""

from __future__ import annotations

import copy

import pytest

from bringup.fleet.models import CheckResult, Node
from bringup.inventory.delivery import parse_delivery
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from burnin.accept.conformance import compare, compare_node
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Action
from tests.doubles.redfish_server import FakeBmc, serving
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PASSWORD = "Conformance-pw"
LAB_SAMPLES = REPO / "bringup" / "lab" / "standins" / "samples"
PROFILE = "h100-sxm-8x400g"
SERIAL = "S454857X3A03562"

ORDER = {
    "name": "po1",
    "nodes": {"count": 2, "serials": [SERIAL, "S454857X3A03563"]},
    "profiles": {
        PROFILE: {
            "cpu": {"model": "Platinum 8480", "sockets": 2, "cores": 112},
            "memory": {"total_gib": 256, "dimm_count": 4, "dimm_size_gib": 64, "dimm_speed_mts": 4800},
            "gpu": {"model": "H100 80GB HBM3", "count": 8, "min_vbios": "96.00.74.00.01"},
            "nics": [{"model": "MT4129", "count": 8, "min_firmware": "28.39.1002"}],
            "nvme": {"count": 2, "model": "MZQL23T8HCLS", "min_capacity_gb": 3840},
            "psu": {"count": 6, "redundancy": "N+N"},
            "bmc": {"min_version": "01.01.00"},
            "bios": {
                "min_version": "2.1",
                "attributes": {"SR-IOVSupport": "Enabled", "ACSControl": "enable"},
            },
        }
    },
}


def order(**changes):
    data = copy.deepcopy(ORDER)
    for path, value in changes.items():
        node = data
        keys = path.split("__")
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    delivery, problems = parse_delivery(data, "po1.yml")
    assert delivery is not None, problems
    return delivery


# The serials nvidia_smi_q_8xh100_535_183.txt lists, GPU 0 to 7.
SMI_SERIALS = [
    "1655022005478",
    "1654522012780",
    "1654922018857",
    "1654522012479",
    "1654922016523",
    "1655022006092",
    "1654522012843",
    "1654922015414",
]


def bmc_gpus(resources: dict, serials: list, model: str = "NVIDIA H100 80GB HBM3") -> None:
    """Make the X13's BMC list these GPUs (its Processors/GPU1 copied, one per serial, slots
    GPU1..), as an HGX server's BMC lists its eight."""
    procs = "/redfish/v1/Systems/1/Processors"
    template = resources.pop(f"{procs}/GPU1")
    members = [m for m in resources[procs]["Members"] if not m["@odata.id"].endswith("/GPU1")]
    for n, serial in enumerate(serials, 1):
        path = f"{procs}/GPU{n}"
        doc = {**template, "@odata.id": path, "Id": f"GPU{n}", "Model": model}
        doc["Location"] = {"PartLocation": {"ServiceLabel": f"GPU{n}", "LocationType": "Slot"}}
        if serial is not None:
            doc["SerialNumber"] = serial
        resources[path] = doc
        members.append({"@odata.id": path})
    resources[procs]["Members"] = members
    resources[procs]["Members@odata.count"] = len(members)


def eight_h100s(resources: dict) -> None:
    bmc_gpus(resources, SMI_SERIALS)


def discovered(fixture: str = "hardware/supermicro-x13", edit=None, gpus=eight_h100s) -> dict:
    """What discovery records of a BMC; the X13 (SYS-821GE-TNHR, an eight-GPU HGX server)
    lists the GPUs ``gpus`` makes: the eight H100s nvidia-smi sees unless said otherwise."""
    fake = FakeBmc.from_fixture(fixture, password=PASSWORD)
    if fixture == "hardware/supermicro-x13":
        gpus(fake.resources)
    if edit:
        edit(fake.resources)
    with serving(fake):
        found = discover_endpoint(BmcEndpoint("n1", fake.url, "root", PASSWORD), TransportOptions(retries=0))
    return found.hardware


def node(hardware: dict, serial: str | None = SERIAL, profile: str = PROFILE) -> Node:
    return Node(name="node01", serial=serial, profile=profile, rack="r1", state="burnin", hardware=hardware)


def result(check: str, text: str) -> CheckResult:
    judged = judge(ALL_CHECKS[check], CommandOutput(text), shipped())
    return CheckResult(
        check=check,
        stage="preflight",
        verdict=judged.verdict.value,
        metrics=judged.metrics,
        findings=[f.to_dict() for f in judged.findings],
    )


def lab_sample(name: str) -> str:
    return (LAB_SAMPLES / name).read_text().partition("\n")[2]


def healthy_results() -> list[CheckResult]:
    return [
        result("gpu_versions", load("nvidia_smi_q_8xh100_535_183.txt")),
        result("ib_ports", lab_sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")),
    ]


def actions(conf) -> list[tuple[str, str, str, str]]:
    return [(m.part, m.slot, m.serial, m.action.value if m.action else "") for m in conf.mismatches]


def test_a_node_as_ordered_conforms_part_by_part():
    conf = compare_node(order(), node(discovered()), healthy_results())
    assert conf.mismatches == ()
    assert conf.conforms is True
    rows = {r.part: r for r in conf.rows}
    assert set(rows) == {
        "chassis",
        "cpu",
        "memory",
        "gpu",
        "gpu (BMC)",
        "nic MT4129",
        "nvme",
        "psu",
        "bmc",
        "bios",
        "bios SR-IOVSupport",
        "bios ACSControl",  # 'enable' ordered, 'Enable' reported: the same setting
    }
    assert all(r.ok for r in conf.rows)
    assert rows["memory"].found == "4 DIMMs (Redfish), 256 GiB"
    assert rows["gpu"].found == "8x NVIDIA H100 80GB HBM3, VBIOS 96.00.74.00.01"
    assert rows["gpu (BMC)"].found == "8x NVIDIA H100 80GB HBM3"
    assert rows["psu"].found == "6 present, 6 healthy"


def test_a_missing_dimm_seen_by_redfish_and_dmidecode_is_reseat_naming_the_slot():
    def pull_dimm(resources):
        dimm = resources["/redfish/v1/Systems/1/Memory/2"]
        dimm.update({"CapacityMiB": 0, "Status": {"State": "Absent", "Health": "OK"}})

    hw = discovered(edit=pull_dimm)
    dmidecode = result("memory_dimms", load("dmidecode_t_memory_4slots_1empty_SYNTHETIC.txt"))
    conf = compare_node(order(), node(hw), [*healthy_results(), dmidecode])
    assert conf.conforms is False
    [missing] = [m for m in conf.mismatches if m.part == "memory"]
    assert missing.finding == (
        "3 (Redfish), 3 (dmidecode) DIMMs populated, the order has 4; empty: P1-DIMMB1"
    )
    assert (missing.action, missing.slot) == (Action.RESEAT, "P1-DIMMB1")


def test_a_gpu_below_the_minimum_vbios_is_named_by_its_serial():
    newer = order(**{f"profiles__{PROFILE}__gpu__min_vbios": "96.00.89.00.01"})
    conf = compare_node(newer, node(discovered()), healthy_results())
    gpu = [m for m in conf.mismatches if m.part == "gpu"]
    assert len(gpu) == 8
    assert (
        gpu[0].finding
        == "GPU 0 (00000000:53:00.0) VBIOS 96.00.74.00.01, the order's minimum is 96.00.89.00.01"
    )
    assert (gpu[0].serial, gpu[0].action, gpu[0].found) == (
        "1655022005478",
        Action.UPDATE_FIRMWARE,
        "96.00.74.00.01",
    )


def test_a_failed_power_supply_is_rma_with_its_slot_and_serial():
    def fail_psu(resources):
        psu = resources["/redfish/v1/Chassis/1/PowerSubsystem/PowerSupplies/3"]
        psu["Status"] = {"State": "UnavailableOffline", "Health": "Critical"}

    conf = compare_node(order(), node(discovered(edit=fail_psu)), healthy_results())
    assert actions(conf) == [("psu", "PSU3", "P3K02GM2303", "RMA")]
    assert conf.mismatches[0].finding == "power supply PSU3 failed: health Critical, UnavailableOffline"
    row = next(r for r in conf.rows if r.part == "psu")
    assert (row.found, row.ok) == ("6 present, 5 healthy", False)


def test_a_serial_not_on_the_packing_list():
    conf = compare_node(order(), node(discovered(), serial="S999"), healthy_results())
    assert actions(conf) == [("chassis", "chassis", "S999", "RMA")]
    assert conf.mismatches[0].finding == "chassis serial S999 is not on the packing list"


def test_the_delivery_counts_its_nodes_and_the_packing_list():
    hw = discovered()
    nodes = [node(hw)]
    conf = compare(order(), nodes, {"node01": healthy_results()})
    assert [(m.part, m.finding, m.action) for m in conf.mismatches] == [
        ("delivery", "1 node(s) delivered, the order has 2", None),
        ("delivery", "serial S454857X3A03563 is on the packing list but no node of the rack has it", None),
    ]
    assert conf.node("node01").conforms is True
    three = [node(hw), node(hw, serial="S454857X3A03563"), node(hw, serial="S3")]
    assert compare(order(), three, {}).mismatches[0].action is Action.RMA  # more than ordered


def test_parts_nobody_reported_cannot_be_compared_and_do_not_pass():
    """dell-idrac9's BMC reports no Memory, Processors, ... and no check ran: every ordered
    part is 'could not be compared' (ok None), never zero DIMMs or zero PSUs."""
    conf = compare_node(order(), node(discovered("dell-idrac9")), [])
    assert conf.conforms is None
    rows = {r.part: r for r in conf.rows}
    for part in ("cpu", "memory", "gpu", "nic MT4129", "nvme", "psu", "bios SR-IOVSupport"):
        assert rows[part].ok is None, part
        assert rows[part].found.startswith("not reported ("), rows[part].found
    assert all(m.action is None for m in conf.mismatches)
    assert "HTTP 404" in rows["memory"].found
    assert rows["bmc"].ok is True  # firmware versions are reported: 7.10.30.00 >= 01.01.00


def test_an_hpe_bmc_without_bios_and_its_version_strings():
    hw = discovered("hardware/hpe-dl360g10p")
    delivery = parse_delivery(
        {
            "name": "po2",
            "nodes": {"count": 1},
            "profiles": {
                PROFILE: {
                    "bmc": {"min_version": "2.60"},  # iLO 5 v2.55
                    "bios": {"min_version": "1.60", "attributes": {"Sriov": "Enabled"}},  # U46 v1.64
                    "memory": {"dimm_count": 2, "dimm_size_gib": 16},
                    "psu": {"count": 2},
                }
            },
        },
        "po2.yml",
    )[0]
    conf = compare_node(delivery, node(hw, serial="MXQ1234"), [])
    rows = {r.part: r for r in conf.rows}
    assert (rows["bmc"].found, rows["bmc"].ok) == ("iLO 5 v2.55", False)
    assert (rows["bios"].found, rows["bios"].ok) == ("U46 v1.64 (09/14/2022)", True)
    assert rows["bios Sriov"].ok is None and "the System links no Bios" in rows["bios Sriov"].found
    assert rows["memory"].ok is True and rows["psu"].ok is True  # 2 of 32 slots populated, as ordered
    assert [(m.part, m.action) for m in conf.mismatches] == [
        ("bmc", Action.UPDATE_FIRMWARE),
        ("bios Sriov", None),
    ]


def test_dell_bios_attribute_and_the_speed_it_runs_at():
    hw = discovered("hardware/dell-idrac9")
    delivery = parse_delivery(
        {
            "name": "po3",
            "nodes": {"count": 1},
            "profiles": {
                PROFILE: {
                    "memory": {"dimm_count": 16, "dimm_speed_mts": 3200},
                    "bios": {
                        "attributes": {
                            "SriovGlobalEnable": "Enabled",
                            "SysProfile": "PerfOptimized",
                            "NoSuch": 1,
                        }
                    },
                }
            },
        },
        "po3.yml",
    )[0]
    conf = compare_node(delivery, node(hw, serial="7YKX3Y3"), [])
    by_part = {}
    for m in conf.mismatches:
        by_part.setdefault(m.part, []).append(m)
    assert [m.finding for m in by_part["bios SriovGlobalEnable"]] == [
        "Bios attribute SriovGlobalEnable is Disabled, the order wants Enabled"
    ]
    assert by_part["bios NoSuch"][0].action is Action.RECONFIGURE
    assert "bios SysProfile" not in by_part
    slow = by_part["memory"]
    assert len(slow) == 16 and slow[0].action is Action.RECONFIGURE and "runs at 2933 MT/s" in slow[0].finding


def test_nic_count_and_firmware():
    delivery = order(
        **{f"profiles__{PROFILE}__nics": [{"model": "MT4129", "count": 9, "min_firmware": "28.40"}]}
    )
    conf = compare_node(delivery, node(discovered()), healthy_results())
    nic = [m for m in conf.mismatches if m.part == "nic MT4129"]
    assert nic[0].finding == "8 MT4129 adapter(s), the order has 9" and nic[0].action is Action.RESEAT
    assert len(nic) == 9
    assert (nic[1].slot, nic[1].serial, nic[1].action) == (
        "mlx5_0",
        "node GUID 0xa088c20300e3142a",
        Action.UPDATE_FIRMWARE,
    )


def test_a_node_whose_profile_the_order_lacks():
    conf = compare_node(order(), node(discovered(), profile="a100"), [])
    assert [(m.part, m.action) for m in conf.mismatches] == [("profile", None)]
    assert conf.conforms is None


@pytest.mark.parametrize("health", ["Critical", "Warning"])
def test_a_dead_fan_is_rma_although_the_order_counts_no_fans(health):
    def stop_fan(resources):
        resources["/redfish/v1/Chassis/1/ThermalSubsystem/Fans/2"]["Status"]["Health"] = health

    conf = compare_node(order(), node(discovered(edit=stop_fan)), healthy_results())
    assert actions(conf) == [("fan", "FAN2", "", "RMA")]


def test_the_newest_result_of_a_check_is_the_one_compared():
    old = result("gpu_versions", load("nvidia_smi_q_8xh100_535_183.txt"))
    old.id, old.metrics = 7, {**old.metrics, "gpu_list": old.metrics["gpu_list"][:7]}
    new = result("gpu_versions", load("nvidia_smi_q_8xh100_535_183.txt"))
    new.id = 9
    conf = compare_node(order(), node(discovered()), [new, old, healthy_results()[1]])
    assert conf.conforms is True  # the 8-GPU result (id 9) wins over the older 7-GPU one


def test_a_bmc_listing_populated_dimms_only_gets_the_empty_slot_from_dmidecode():
    """Supermicro (and iDRAC) list populated DIMMs only: a missing one is simply not there.
    dmidecode, whose recording has DIMM_B1 empty, names the slot."""

    def drop_one(resources):
        memory = resources["/redfish/v1/Systems/1/Memory"]
        memory["Members"] = [m for m in memory["Members"] if not m["@odata.id"].endswith("/2")]
        memory["Members@odata.count"] = 3
        resources.pop("/redfish/v1/Systems/1/Memory/2")

    dmidecode = result("memory_dimms", load("dmidecode_t_memory_4slots_1empty_SYNTHETIC.txt"))
    conf = compare_node(order(), node(discovered(edit=drop_one)), [*healthy_results(), dmidecode])
    [missing] = [m for m in conf.mismatches if m.part == "memory"]
    assert (missing.slot, missing.action) == ("DIMM_B1", Action.RESEAT)
    assert missing.finding == "3 (Redfish), 3 (dmidecode) DIMMs populated, the order has 4; empty: DIMM_B1"


def pcie_tree(gpu_buses=(0x53, 0x64, 0x75, 0x86, 0x97, 0xA8, 0xB9, 0xCA)) -> CheckResult:
    """The pcie stage's record of the PCI tree (pcie_links' ``links`` metric) of an 8-GPU HGX
    node as the lab's fake sysfs lays it out (bringup/lab/standins/sysfs.py): GPU n in slot n+1,
    its ConnectX-7 mlx5_n in slot n+11."""
    links = []
    for i, bus in enumerate(gpu_buses):
        links.append({"role": f"GPU {i}", "bdf": f"0000:{bus:02x}:00.0", "slot": str(i + 1)})
        links.append({"role": f"mlx5_{i}", "bdf": f"0000:{bus + 1:02x}:00.0", "slot": str(i + 11)})
    return CheckResult(
        check="pcie_links", stage="pcie", verdict="PASS", metrics={"links": links}, findings=[]
    )


def test_a_gpu_the_os_lost_is_named_by_the_pci_address_and_slot_the_pci_tree_still_shows():
    """nvidia-smi lists 7 of 8 GPUs (GPU 4, 00000000:97:00.0, gone); the count alone named no
    part ('Slot: -' in the RMA bundle). The PCI tree still shows the device: its address and
    slot name the card to reseat."""
    seven = result("gpu_versions", lab_sample("nvidia_smi_q_8xh100_535_183_gpu4_missing_DERIVED.txt"))
    conf = compare_node(order(), node(discovered()), [seven, healthy_results()[1], pcie_tree()])
    (gpu,) = [m for m in conf.mismatches if m.part == "gpu"]
    assert gpu.action is Action.RESEAT
    assert gpu.slot == "PCI 0000:97:00.0, slot 5"
    assert "0000:97:00.0" in gpu.finding and "7 GPUs, the order has 8" in gpu.finding
    # without the pcie stage's record nothing is named, and nothing is invented
    conf = compare_node(order(), node(discovered()), [seven, healthy_results()[1]])
    (gpu,) = [m for m in conf.mismatches if m.part == "gpu"]
    assert (gpu.finding, gpu.slot) == ("7 GPUs, the order has 8", "")


def test_an_hca_ibstat_lost_is_named_by_its_pci_address():
    ibstat = result("ib_ports", lab_sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt"))
    ibstat.metrics = {
        **ibstat.metrics,
        "hca_list": [h for h in ibstat.metrics["hca_list"] if h["name"] != "mlx5_3"],
    }
    gpus = healthy_results()[0]
    conf = compare_node(order(), node(discovered()), [gpus, ibstat, pcie_tree()])
    (nic,) = [m for m in conf.mismatches if m.part == "nic MT4129"]
    assert nic.slot == "PCI 0000:87:00.0, slot 14" and "mlx5_3 at PCI 0000:87:00.0" in nic.finding

"""Network ports from Redfish JSON (pure): MACs, placement, merging sources, the provisioning rule."""

from __future__ import annotations

import pytest

from bringup.redfish import nics


@pytest.mark.parametrize(
    "raw, want",
    [
        ("B0:7B:25:E0:4E:A0", "b0:7b:25:e0:4e:a0"),
        ("b0-7b-25-e0-4e-a0", "b0:7b:25:e0:4e:a0"),
        ("b07b.25e0.4ea0", "b0:7b:25:e0:4e:a0"),
        ("00:00:00:00:00:00", None),
        ("", None),
        (None, None),
        ("b0:7b:25:e0:4e", None),
    ],
)
def test_normalise_mac(raw, want):
    assert nics.normalise_mac(raw) == want


@pytest.mark.parametrize(
    "texts, location, want",
    [
        (["NIC.Embedded.2-1-1"], None, ("embedded", None, 1)),
        (["NIC.Integrated.1-2-1"], None, ("integrated", None, 2)),
        (["NIC.Slot.5-2-1"], None, ("slot", 5, 2)),
        (["NIC.LOM.1.1"], None, ("embedded", None, 1)),  # HPE StructuredName
        (["NIC.Slot.14.2"], None, ("slot", 14, 2)),
        (["x"], {"PartLocation": {"LocationType": "Slot", "LocationOrdinalValue": 3}}, ("slot", 3, None)),
        (["x"], {"PartLocation": {"ServiceLabel": "PCIe Slot 7"}}, ("slot", 7, None)),
        (["Onboard LAN1"], None, ("embedded", None, 1)),
        (["02:aa:bb:cc:00:01", "VNIC 02:aa:bb:cc:00:01"], None, (None, None, None)),
    ],
)
def test_place(texts, location, want):
    assert nics.place(*texts, location=location) == want


def test_ethernet_interface_prefers_the_permanent_mac():
    nic = nics.from_ethernet_interface(
        {
            "Id": "NIC.Integrated.1-2-1",
            "PermanentMACAddress": "30:3E:A7:1B:52:11",
            "MACAddress": "02:00:00:1B:52:11",
        }
    )
    assert (nic.mac, nic.permanent, nic.current_mac) == ("30:3e:a7:1b:52:11", True, "02:00:00:1b:52:11")
    only_current = nics.from_ethernet_interface({"Id": "1", "MACAddress": "3C:EC:EF:2A:4B:10"})
    assert (only_current.mac, only_current.permanent) == ("3c:ec:ef:2a:4b:10", False)
    virtual = {"Id": "ToManager", "MACAddress": "3C:EC:EF:2A:4B:99", "EthernetInterfaceType": "Virtual"}
    assert nics.from_ethernet_interface(virtual) is None


def test_device_functions_skip_infiniband_and_keep_its_guids():
    adapter = {"Id": "InfiniBand.Slot.31"}
    fn = {
        "Id": "InfiniBand.Slot.31-1",
        "NetDevFuncType": "InfiniBand",
        "InfiniBand": {"PermanentPortGUID": "A0:88"},
    }
    assert nics.from_device_function(adapter, fn) is None
    assert nics.infiniband_function(adapter, fn)["port_guid"] == "A0:88"


def test_merge_keeps_the_first_source_and_fills_its_gaps():
    first = nics.Nic(id="1", mac="aa:bb:cc:dd:ee:01", source="EthernetInterfaces", permanent=False)
    second = nics.Nic(
        id="NIC.Slot.2-1-1",
        mac="aa:bb:cc:dd:ee:01",
        source="NetworkDeviceFunctions",
        permanent=True,
        adapter="NIC.Slot.2",
        location="slot",
        slot=2,
    )
    other = nics.Nic(id="2", mac="aa:bb:cc:dd:ee:02", source="Ports", permanent=False)
    merged = nics.merge([first, second, other])
    assert [n.mac for n in merged] == ["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"]
    assert (merged[0].source, merged[0].slot, merged[0].adapter, merged[0].permanent) == (
        "EthernetInterfaces",
        2,
        "NIC.Slot.2",
        True,
    )


def _rack_of_nics() -> list[nics.Nic]:
    ids = [
        "NIC.Slot.5-2-1",
        "NIC.Slot.5-1-1",
        "NIC.Integrated.1-1-1",
        "NIC.Embedded.2-1-1",
        "NIC.Embedded.1-1-1",
    ]
    out = []
    for i, ident in enumerate(ids):
        loc, slot, port = nics.place(ident)
        out.append(
            nics.Nic(
                ident, f"aa:bb:cc:dd:ee:0{i}", "EthernetInterfaces", True, location=loc, slot=slot, port=port
            )
        )
    return out


@pytest.mark.parametrize(
    "rule, want",
    [
        ("onboard", "NIC.Embedded.1-1-1"),
        (None, "NIC.Embedded.1-1-1"),
        ("slot:5", "NIC.Slot.5-1-1"),
        ("slot:5:2", "NIC.Slot.5-2-1"),
        ("fqdd:nic.integrated.1-1-1", "NIC.Integrated.1-1-1"),
        ("mac:AA-BB-CC-DD-EE-03", "NIC.Embedded.2-1-1"),
        ("slot:9", None),
    ],
)
def test_provisioning_rule(rule, want):
    chosen = nics.choose_provisioning(_rack_of_nics(), nics.parse_rule(rule))
    assert (chosen.id if chosen else None) == want


@pytest.mark.parametrize("bad", ["slot:x", "pci:1", "mac:zz", "fqdd:"])
def test_bad_provisioning_rules_say_how_to_write_one(bad):
    with pytest.raises(ValueError, match="slot:N"):
        nics.parse_rule(bad)

"""The provisioning NIC and Ethernet-only MACs on real BMC shapes: a Cisco UCS C240 M5
(LOM ports L.1/L.2 listed after the VIC's 3.2), an HPE DL360 Gen10 Plus (iLO 5: agent-filled
EthernetInterfaces without placement, the OCP 3.0 card listed first, placement only in the OEM
BaseNetworkAdapters), the same HPE with only its OCP card, and a Cisco S3260 node's SIOC VIC whose
fc0/fc1 functions carry WWNs and no NetDevFuncType. Trees in tests/fixtures/redfish/, served over
real HTTP by tests/doubles/redfish_server.py.

Why the OCP-only HPE is flagged rather than given its OCP port 1: `onboard` is a claim about
placement, and an OCP 3.0 card is a removable card in a slot (DMTF LocationType Slot; HPE's own
label is "OCP 3.0 Slot 10") that takes any OCP NIC, on a GPU node as likely a data-network card as
the provisioning one. A wrong guess is a node hung waiting for DHCP; the flag costs one inventory
line (`provisioning_nic: slot:10`, per group if the whole rack is built that way).
"""

from __future__ import annotations

import pytest

from bringup.redfish import nics
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.nics import parse_rule
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "Nq4-bmc-shape"


def discovered(fixture: str, rule: str | None = None):
    fake = FakeBmc.from_fixture(fixture, password=PASSWORD)
    with serving(fake):
        ep = BmcEndpoint("node01", fake.url, "root", PASSWORD, None, False)
        return discover_endpoint(ep, TransportOptions(retries=0), parse_rule(rule))


def placed(d) -> dict[str, tuple]:
    return {n["id"]: (n["location"], n["slot"], n["port"]) for n in d.hardware["nics"]}


# -- defect 2: the onboard rule took the first NIC in the BMC's order --------------------------


def test_c240_onboard_rule_takes_the_lom_port_not_the_vic_port_the_bmc_lists_first():
    d = discovered("cisco-ucs-c240m5")
    hw = d.hardware
    assert hw["provisioning_nic"] == {
        "id": "L.1",
        "mac": "70:0f:6a:d2:3b:14",
        "rule": "onboard",
        "reason": "onboard: embedded port 1, the first onboard port",
    }
    assert "provisioning_nic_flag" not in hw
    assert placed(d) == {
        "L.1": ("embedded", None, 1),
        "L.2": ("embedded", None, 2),
        "3.1": ("slot", 3, 1),
        "3.2": ("slot", 3, 2),
    }
    assert d.macs[:2] == ["70:0f:6a:d2:3b:14", "70:0f:6a:d2:3b:15"]  # onboard first
    # The VIC's vHBAs (typed FCoE) are Fibre Channel identities, not Ethernet ports.
    assert len(d.macs) == 4 and [f["wwpn"] for f in hw["fibre_channel"]] == [
        "20:00:70:0f:6a:9e:41:a2",
        "20:00:70:0f:6a:9e:41:a3",
    ]


def test_hpe_dl360_onboard_rule_takes_the_embedded_lom_not_the_ocp_port_the_bmc_lists_first():
    fake = FakeBmc.from_fixture("hpe-dl360g10p", password=PASSWORD)
    with serving(fake):
        ep = BmcEndpoint("node01", fake.url, "root", PASSWORD, None, False)
        d = discover_endpoint(ep, TransportOptions(retries=0))
    hw = d.hardware
    assert (hw["provisioning_nic"]["id"], hw["provisioning_nic"]["mac"]) == ("3", "94:40:c9:3e:7a:50")
    assert "embedded port 1" in hw["provisioning_nic"]["reason"] and "provisioning_nic_flag" not in hw
    # The agent-filled EthernetInterfaces say nothing of placement; iLO's BaseNetworkAdapters do.
    assert fake.calls("GET", "/BaseNetworkAdapters")
    assert placed(d) == {
        "1": ("slot", 10, 1),
        "2": ("slot", 10, 2),
        "3": ("embedded", None, 1),
        "4": ("embedded", None, 2),
    }
    assert {n["source"] for n in hw["nics"]} == {"EthernetInterfaces"}  # the OEM view only filled gaps


def test_hpe_with_only_an_ocp_card_is_flagged_until_a_rule_names_the_port():
    d = discovered("hpe-dl360g10p-ocp-only")
    hw = d.hardware
    assert hw["provisioning_nic"] is None
    flag = hw["provisioning_nic_flag"]
    assert flag["kind"] == "ambiguous" and flag["rule"] == "onboard"
    assert flag["message"].startswith(
        "provisioning NIC ambiguous: candidates 1 (slot 10 port 1, 88:e9:a4:5b:10:20), "
        "2 (slot 10 port 2, 88:e9:a4:5b:10:21) (no port is known to be onboard)"
    )
    assert flag["message"] in d.warnings
    assert [c["id"] for c in flag["candidates"]] == ["1", "2"]
    # An explicit rule settles it.
    again = discovered("hpe-dl360g10p-ocp-only", "slot:10")
    assert again.hardware["provisioning_nic"] == {
        "id": "1",
        "mac": "88:e9:a4:5b:10:20",
        "rule": "slot:10",
        "reason": "rule slot:10: slot 10 port 1",
    }
    assert "provisioning_nic_flag" not in again.hardware


def test_s3260_node_with_only_its_sioc_vic_is_flagged_not_given_sioc1_0():
    hw = discovered("cisco-ucs-s3260-sioc-fc").hardware
    assert hw["provisioning_nic"] is None
    assert hw["provisioning_nic_flag"]["message"].startswith(
        "provisioning NIC ambiguous: candidates SIOC1.0 (mezzanine port 0, a0:3d:6f:4c:20:10), SIOC1.1"
    )


def test_placement_from_pcie_devices_when_nothing_else_says():
    fake = FakeBmc.from_fixture("generic-pcie-nics", password=PASSWORD)
    with serving(fake):
        ep = BmcEndpoint("node01", fake.url, "root", PASSWORD, None, False)
        d = discover_endpoint(ep, TransportOptions(retries=0))
    assert placed(d) == {
        "1": ("slot", 2, 1),
        "2": ("slot", 2, 2),
        "3": ("embedded", None, 1),
        "4": ("embedded", None, 2),
    }
    assert (d.hardware["provisioning_nic"]["id"], d.macs[0]) == ("3", "3c:ec:ef:9a:22:10")
    # Only placed devices' functions are read, and only because nothing else placed a port.
    assert fake.calls("GET", "/PCIeDevices/2/PCIeFunctions")


def test_pcie_devices_are_read_once_for_the_record_and_placement_reuses_them():
    """Discovery records every PCIe device (docs/redfish.md, "GPUs and PCIe devices");
    placement's last resort uses what was read instead of asking again."""
    fake = FakeBmc.from_fixture("generic-pcie-nics", password=PASSWORD)
    with serving(fake):
        ep = BmcEndpoint("node01", fake.url, "root", PASSWORD, None, False)
        d = discover_endpoint(ep, TransportOptions(retries=0))
    paths = [r.path for r in fake.calls("GET", "PCIeDevices")]
    assert paths and len(paths) == len(set(paths))
    assert len(d.hardware["pcie_devices"]) == len(
        fake.resources["/redfish/v1/Chassis/1/PCIeDevices"]["Members"]
    )


def test_a_broken_pcie_inventory_keeps_the_nics():
    fake = FakeBmc.from_fixture("generic-pcie-nics", password=PASSWORD)
    fake.queued["/redfish/v1/Chassis/1/PCIeDevices"] = [500] * 8
    with serving(fake):
        ep = BmcEndpoint("node01", fake.url, "root", PASSWORD, None, False)
        d = discover_endpoint(ep, TransportOptions(retries=0))
    assert len(d.macs) == 4 and "nics" not in d.hardware["unavailable"]
    assert d.hardware["provisioning_nic_flag"]["kind"] == "ambiguous"  # placement unknown: no guess


# -- defect 3: Fibre Channel functions counted as Ethernet --------------------------------------


def test_untyped_fc_functions_are_fibre_channel_identities_not_ethernet_macs():
    d = discovered("cisco-ucs-s3260-sioc-fc")
    assert d.macs == ["a0:3d:6f:4c:20:10", "a0:3d:6f:4c:20:11"]
    assert d.hardware["fibre_channel"] == [
        {
            "id": "fc0",
            "adapter": "UCS-S3260-PCISIOC_FCH21457LMN",
            "wwpn": "20:00:a0:3d:6f:4c:20:12",
            "wwnn": "10:00:a0:3d:6f:4c:20:12",
            "port": "Port-1",
            "type": None,
        },
        {
            "id": "fc1",
            "adapter": "UCS-S3260-PCISIOC_FCH21457LMN",
            "wwpn": "20:00:a0:3d:6f:4c:20:13",
            "wwnn": "10:00:a0:3d:6f:4c:20:13",
            "port": "Port-2",
            "type": None,
        },
    ]
    assert not {"a0:3d:6f:4c:20:12", "a0:3d:6f:4c:20:13"} & {n["mac"] for n in d.hardware["nics"]}


@pytest.mark.parametrize(
    "fn, kind",
    [
        ({"NetDevFuncType": "Ethernet", "Ethernet": {"MACAddress": "aa:bb:cc:00:00:01"}}, "ethernet"),
        ({"Ethernet": {"MACAddress": "aa:bb:cc:00:00:01"}}, "ethernet"),  # untyped, nothing else
        (
            {
                "Ethernet": {"MACAddress": "aa:bb:cc:00:00:02"},
                "FibreChannel": {"WWPN": "20:00:aa:bb:cc:00:00:02"},
            },
            "fc",
        ),
        ({"FibreChannel": {"PermanentWWNN": "1000aabbcc000003"}}, "fc"),
        (
            {"NetDevFuncType": "FibreChannelOverEthernet", "Ethernet": {"MACAddress": "aa:bb:cc:00:00:04"}},
            "fc",
        ),
        ({"InfiniBand": {"PermanentPortGUID": "0x946dae03004c2b10"}}, "ib"),
        ({"NetDevFuncType": "iSCSI", "Ethernet": {"MACAddress": "aa:bb:cc:00:00:05"}}, "other"),
        # Empty or zeroed sub-objects (some BMCs fill every one) say nothing.
        (
            {
                "Ethernet": {"MACAddress": "aa:bb:cc:00:00:06"},
                "FibreChannel": {"WWPN": "00:00:00:00:00:00:00:00"},
            },
            "ethernet",
        ),
        (
            {"NetDevFuncType": "Ethernet", "Ethernet": {"MACAddress": "aa:bb:cc:00:00:07"}, "InfiniBand": {}},
            "ethernet",
        ),
    ],
)
def test_function_kind(fn, kind):
    assert nics.function_kind(fn) == kind
    assert (nics.from_device_function({"Id": "A"}, fn) is not None) == (kind == "ethernet")


# -- placement, pure ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "texts, location, want",
    [
        (["L.1"], None, ("embedded", None, 1)),  # Cisco LOM
        (["LOM"], None, ("embedded", None, None)),
        (["3.2"], None, ("slot", 3, 2)),  # Cisco PCIe slot 3, port 2
        (["MLOM.0"], None, ("mezzanine", None, 0)),
        (["SIOC1.1"], None, ("mezzanine", None, 1)),
        (["OCP.Slot.10.1"], None, ("slot", 10, 1)),  # HPE Gen10 Plus StructuredName
        (["1", "vmnic0", "Embedded LOM"], None, ("embedded", None, None)),  # HPE Location string
        (["1", "vmnic0", "OCP 3.0 Slot 10"], None, ("slot", 10, None)),
        (["Onboard LAN2"], None, ("embedded", None, 2)),  # Supermicro
        (["1", "AIOM"], None, ("mezzanine", None, None)),
        (
            ["eth0"],
            [None, {"PartLocation": {"LocationType": "Slot", "ServiceLabel": "SlotID:3"}}],
            ("slot", 3, None),
        ),
        (
            ["x"],
            {"PartLocation": {"LocationType": "Slot", "ServiceLabel": "SlotID:MLOM"}},
            ("mezzanine", None, None),
        ),
        (["x"], {"PartLocation": {"LocationType": "Embedded"}}, ("embedded", None, None)),
        (["x"], {"PhysicalContext": "SystemBoard"}, ("embedded", None, None)),
        (["x"], {"PartLocation": {"LocationType": "Integrated"}}, ("integrated", None, None)),
        (["L.2"], {"PartLocation": {"LocationType": "Embedded"}}, ("embedded", None, 2)),
        (["NIC.Slot.5-2-1"], {"PartLocation": {"LocationType": "Embedded"}}, ("slot", 5, 2)),  # the FQDD wins
        (["1", "vmnic0"], None, (None, None, None)),
    ],
)
def test_place_reads_every_vendors_placement(texts, location, want):
    assert nics.place(*texts, location=location) == want


def test_dmtf_port_and_adapter_locations():
    adapter = {"Id": "A1", "Controllers": [{"Location": {"PartLocation": {"ServiceLabel": "PCIe Slot 4"}}}]}
    port = {
        "Id": "1",
        "PhysicalPortNumber": "1",
        "Ethernet": {"AssociatedMACAddresses": ["aa:bb:cc:00:00:09"]},
    }
    assert [(n.location, n.slot, n.port) for n in nics.from_port(adapter, port)] == [("slot", 4, 1)]
    fc_port = {
        "Id": "2",
        "LinkNetworkTechnology": "FibreChannel",
        "Ethernet": {"AssociatedMACAddresses": ["aa:bb:cc:00:00:0a"]},
    }
    assert nics.from_port(adapter, fc_port) == []


# -- the choice, pure -------------------------------------------------------------------------------


def nic(ident: str, i: int) -> nics.Nic:
    loc, slot, port = nics.place(ident)
    return nics.Nic(
        ident, f"aa:bb:cc:00:01:{i:02x}", "EthernetInterfaces", True, location=loc, slot=slot, port=port
    )


def test_onboard_is_flagged_when_no_placement_is_published():
    lab = [nics.Nic(m, m, "EthernetInterfaces", True) for m in ("02:aa:00:00:00:02", "02:aa:00:00:00:01")]
    choice = nics.decide(lab, parse_rule("onboard"))
    assert choice.nic is None and choice.flag_kind == "ambiguous"
    assert "the BMC publishes no NIC's placement" in choice.message
    assert nics.choose_provisioning(lab, parse_rule("onboard")) is None


def test_one_ethernet_port_is_no_choice_at_all():
    only = [nics.Nic("1", "02:aa:00:00:00:01", "EthernetInterfaces", True)]
    choice = nics.decide(only, parse_rule(None))
    assert choice.nic is only[0] and choice.flag() is None
    assert choice.record()["reason"] == "onboard: the only Ethernet port (placement unknown)"


def test_onboard_ports_without_port_numbers_are_flagged():
    two = [nics.Nic(str(i), f"02:aa:00:00:00:0{i}", "OEM", False, location="embedded") for i in (1, 2)]
    choice = nics.decide(two, parse_rule("onboard"))
    assert choice.flag_kind == "ambiguous" and "do not say which is port 1" in choice.message


def test_embedded_wins_over_integrated_and_slots():
    got = nics.decide(
        [nic("3.1", 1), nic("NIC.Integrated.1-1-1", 2), nic("L.2", 3), nic("L.1", 4)], parse_rule(None)
    )
    assert (got.nic.id, got.reason) == ("L.1", "onboard: embedded port 1, the first onboard port")


def test_an_explicit_rule_that_matches_nothing_is_flagged_with_the_candidates():
    choice = nics.decide([nic("3.1", 1), nic("3.2", 2)], parse_rule("slot:9"))
    flag = choice.flag()
    assert flag["kind"] == "no-match" and [c["id"] for c in flag["candidates"]] == ["3.1", "3.2"]
    assert flag["message"].startswith("provisioning NIC rule slot:9: candidates 3.1 (slot 3 port 1")


def test_a_long_candidate_list_is_cut_in_the_line_not_in_the_record():
    many = [nic(f"{s}.{p}", s * 4 + p) for s in (1, 2, 3) for p in (1, 2, 3, 4)]
    flag = nics.decide(many, parse_rule(None)).flag()
    assert "and 4 more" in flag["message"] and len(flag["candidates"]) == 12


def test_recorded_nics_round_trip():
    n = nic("L.1", 1)
    assert nics.from_record(n.record()) == n

"""HPE iLO quirks (pure): the OEM BaseNetworkAdapters ports."""

from __future__ import annotations

from bringup.redfish.vendors.hpe import base_adapter_nics


def test_hpe_base_network_adapter_ports():
    got = base_adapter_nics(
        {
            "Id": "1",
            "StructuredName": "NIC.LOM.1.1",
            "PhysicalPorts": [{"MacAddress": "98:f2:b3:2a:0e:a0"}, {}],
        }
    )
    assert [(n.mac, n.location, n.port, n.source) for n in got] == [
        ("98:f2:b3:2a:0e:a0", "embedded", 1, "OEM")
    ]

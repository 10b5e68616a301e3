"""FleetStore.record_discovery: enrolled -> discovered, refresh, and a changed serial flagged."""

from __future__ import annotations

import pytest

from bringup.fleet.store import FleetStore, NodeNotFound
from bringup.redfish.discovery import HARDWARE_KEYS

MACS = ["b0:7b:25:e0:4e:a0", "30:3e:a7:1b:52:10"]


def hardware(**extra):
    return {
        "bmc": {"vendor": "dell"},
        "event_log": [
            {"id": "4", "created": None, "severity": "Critical", "message": "psu", "message_id": "PSU3"}
        ],
        "event_log_read_at": "2025-03-04T10:00:00+00:00",
        **extra,
    }


@pytest.fixture
def store(store_url):
    s = FleetStore(store_url)
    s.enroll("gpu001", "r01", "h100-sxm-8x400g", bmc_address="10.10.1.11", bmc_vendor="dell", rack_unit=3)
    s.enroll("gpu002", "r01", "h100-sxm-8x400g", bmc_address="10.10.1.12", bmc_vendor="dell", rack_unit=9)
    yield s
    s.close()


def record(store, name="gpu001", serial="CN0001", **kw):
    return store.record_discovery(
        name, serial, macs=MACS, hardware=hardware(), owned_keys=HARDWARE_KEYS, **kw
    )


def test_first_discovery_moves_enrolled_to_discovered(store):
    assert record(store, run_id=None, details={"tls": "verified"}) == "discovered"
    node = store.get_node("CN0001")  # keyed by serial from now on
    assert (node.name, node.state, node.serial, node.macs) == ("gpu001", "discovered", "CN0001", MACS)
    assert node.hardware["event_log"][0]["severity"] == "Critical"
    last = store.history("gpu001")[-1]
    assert (last.kind, last.from_state, last.to_state) == ("transition", "enrolled", "discovered")
    assert last.details["tls"] == "verified" and last.details["serial"] == "CN0001"


def test_rediscovery_refreshes_and_replaces_only_what_discovery_owns(store):
    record(store)
    # (a key of another stage: "gpus" is discovery's own now, the BMC's GPU list)
    store.update_node("gpu001", hardware={**store.get_node("gpu001").hardware, "os_gpus": ["GPU-1"]})
    unreadable = {"bmc": {"vendor": "dell"}, "unavailable": {"event_log": "not supported"}}
    outcome = store.record_discovery(
        "gpu001", "CN0001", macs=MACS[:1], hardware=unreadable, owned_keys=HARDWARE_KEYS
    )
    assert outcome == "refreshed"
    node = store.get_node("gpu001")
    assert node.state == "discovered" and node.macs == MACS[:1]
    assert "event_log" not in node.hardware and "event_log_read_at" not in node.hardware  # not stale
    assert node.hardware["os_gpus"] == ["GPU-1"]  # another stage's data survives
    assert store.history("gpu001")[-1].kind == "discovery"


def test_a_changed_serial_is_flagged_not_rekeyed(store):
    record(store)
    assert record(store, serial="CN0999") == "serial-changed"
    node = store.get_node("gpu001")
    assert node.serial == "CN0001"
    assert (
        node.hardware["serial_flag"]["kind"] == "changed"
        and node.hardware["serial_flag"]["reported"] == "CN0999"
    )
    event = store.history("gpu001")[-1]
    assert event.kind == "serial-changed" and "CN0001" in event.reason and "CN0999" in event.reason
    # Once checked, the operator accepts it.
    assert record(store, serial="CN0999", accept_new_serial=True) == "rekeyed"
    node = store.get_node("CN0999")
    assert node.name == "gpu001" and "serial_flag" not in node.hardware
    assert [e.kind for e in store.history("gpu001")][-2:] == ["serial-accepted", "discovery"]


def test_a_serial_owned_by_another_node_is_a_conflict(store):
    record(store, "gpu001", "CN0001")
    assert record(store, "gpu002", "CN0001") == "serial-conflict"
    other = store.get_node("gpu002")
    assert other.serial is None and other.state == "enrolled"
    assert other.hardware["serial_flag"]["other"] == "gpu001"
    assert store.history("gpu002")[-1].kind == "serial-conflict"


def test_unknown_node(store):
    with pytest.raises(NodeNotFound):
        record(store, "gpu404")

"""Fake BMCs: one sushy-tools process serving a separate Redfish BMC on each system's address.

Runs on loopback addresses (all of 127.0.0.0/8 routes to lo on Linux), so it needs neither
root nor namespaces. Each test module instance picks a random 127.x.y.0/24 and a free port,
so xdist workers never collide.
"""

from __future__ import annotations

import os
import random
import socket
import uuid
from pathlib import Path

import pytest
import redfish

from bringup.lab.bmc import BmcEmulator, BmcError, BmcSystem, bmc_url
from tests.conftest import unavailable

USER, PASSWORD = "root", "lab-secret"


def _free_port(addresses: list[str]) -> int:
    """A port free on every address (bound and released; the race is narrow and per-subnet)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((addresses[0], 0))
            port = s.getsockname()[1]
        try:
            for address in addresses:
                with socket.socket() as s:
                    s.bind((address, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port")


def _systems(count: int) -> list[BmcSystem]:
    rnd = random.Random(os.urandom(8))
    net = f"127.{rnd.randint(1, 254)}.{rnd.randint(0, 255)}"
    return [
        BmcSystem(
            name=f"node{i:02d}",
            uuid=str(uuid.uuid4()),
            serial=f"LAB{rnd.randint(0, 0xFFFFFF):06X}{i}",
            macs=[f"02:aa:bb:cc:{i:02x}:01", f"02:aa:bb:cc:{i:02x}:02"],
            address=f"{net}.{i}",
            power_state="On" if i % 2 else "Off",
        )
        for i in range(1, count + 1)
    ]


def _client(system: BmcSystem, port: int, password: str = PASSWORD):
    # The redfish library's traps (docs/redfish.md): default timeout is None (hangs on a dead BMC) and 10 retries of 1 s.
    client = redfish.redfish_client(
        base_url=bmc_url(system.address, port),
        username=USER,
        password=password,
        timeout=5,
        max_retry=1,
        proxies={"http": "", "https": ""},
    )
    return client


def _get(client, path: str):
    response = client.get(path)
    # Non-2xx does not raise in this library: callers check .status.
    return response.status, response.dict


@pytest.fixture(scope="module", autouse=True)
def _needs_sushy() -> None:
    try:
        import sushy_tools  # noqa: F401
    except ImportError:
        unavailable("sushy-tools is not installed (pip install -e '.[lab]')")


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    systems = _systems(4)
    port = _free_port([s.address for s in systems])
    emulator = BmcEmulator(systems, port, tmp_path_factory.mktemp("bmc"), USER, PASSWORD)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


def test_each_address_is_its_own_bmc(rack):
    for system in rack.systems:
        client = _client(system, rack.port)
        client.login(auth="basic")
        try:
            status, collection = _get(client, "/redfish/v1/Systems")
            assert status == 200
            assert collection["Members@odata.count"] == 1
            assert collection["Members"] == [{"@odata.id": f"/redfish/v1/Systems/{system.uuid}"}]

            status, doc = _get(client, f"/redfish/v1/Systems/{system.uuid}")
            assert status == 200
            assert (doc["Name"], doc["UUID"], doc["SerialNumber"]) == (
                system.name,
                system.uuid,
                system.serial,
            )
            assert (doc["Manufacturer"], doc["Model"]) == (system.manufacturer, system.model)
            assert doc["PowerState"] == system.power_state

            status, nics = _get(client, f"/redfish/v1/Systems/{system.uuid}/EthernetInterfaces")
            assert status == 200
            macs = []
            for member in nics["Members"]:
                status, nic = _get(client, member["@odata.id"])
                assert status == 200
                macs.append(nic["MACAddress"].lower())
            assert sorted(macs) == sorted(system.macs)

            chassis_url = doc["Links"]["Chassis"][0]["@odata.id"]
            status, chassis = _get(client, chassis_url)
            assert status == 200 and chassis["SerialNumber"] == system.serial
            assert chassis["Links"]["ComputerSystems"] == [
                {"@odata.id": f"/redfish/v1/Systems/{system.uuid}"}
            ]
            status, chassis_list = _get(client, "/redfish/v1/Chassis")
            assert [m["@odata.id"] for m in chassis_list["Members"]] == [chassis_url]
            status, managers = _get(client, "/redfish/v1/Managers")
            assert managers["Members@odata.count"] == 1
        finally:
            client.logout()


def test_wrong_password_is_401(rack):
    system = rack.systems[0]
    client = _client(system, rack.port, password="wrong")
    with pytest.raises(redfish.rest.v1.InvalidCredentialsError):
        client.login(auth="basic")
    status, _ = _get(client, "/redfish/v1/Systems")
    assert status == 401
    status, _ = _get(client, "/redfish/v1")  # the service root is public, as on real BMCs
    assert status == 200


def test_other_systems_are_not_found_through_this_address(rack):
    me, other = rack.systems[0], rack.systems[1]
    client = _client(me, rack.port)
    client.login(auth="basic")
    for path in (
        f"/redfish/v1/Systems/{other.uuid}",
        f"/redfish/v1/Systems/{other.uuid}/EthernetInterfaces",
        f"/redfish/v1/Systems/{other.name}",
        f"/redfish/v1/Managers/{other.uuid}",
        f"/redfish/v1/Chassis/{other.uuid}",
    ):
        status, _ = _get(client, path)
        assert status == 404, path
    # ... while the other address serves it.
    other_client = _client(other, rack.port)
    other_client.login(auth="basic")
    status, doc = _get(other_client, f"/redfish/v1/Systems/{other.uuid}")
    assert status == 200 and doc["SerialNumber"] == other.serial


def test_htpasswd_and_config_hold_no_plain_password(rack):
    for name in ("htpasswd", "bmc.json"):
        path = rack.state_dir / name
        assert PASSWORD not in path.read_text()
        assert path.stat().st_mode & 0o077 == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _answers(address: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((address, port)) == 0


def test_stop_leaves_no_process_and_is_idempotent(tmp_path):
    systems = _systems(2)
    port = _free_port([s.address for s in systems])
    emulator = BmcEmulator(systems, port, tmp_path, USER, PASSWORD)
    emulator.start()
    pid = emulator.pid
    assert pid and _alive(pid) and os.getsid(pid) == pid  # own session: survives the caller
    emulator.stop()
    emulator.stop()
    assert not _alive(pid)
    assert not any(_answers(s.address, port) for s in systems)
    assert not (tmp_path / "bmc.pid").exists()


def test_stop_from_state_after_a_crash(tmp_path):
    systems = _systems(1)
    port = _free_port([s.address for s in systems])
    emulator = BmcEmulator(systems, port, tmp_path, USER, PASSWORD)
    emulator.start()
    pid = emulator.pid
    del emulator  # the caller "crashed": only the state dir knows the server
    assert BmcEmulator.stop_from_state(tmp_path) is True
    assert not _alive(pid)
    assert BmcEmulator.stop_from_state(tmp_path) is False


def test_start_fails_clearly_when_the_port_is_taken(tmp_path):
    systems = _systems(2)
    port = _free_port([s.address for s in systems])
    with socket.socket() as squatter:
        squatter.bind((systems[1].address, port))
        squatter.listen()
        emulator = BmcEmulator(systems, port, tmp_path, USER, PASSWORD)
        with pytest.raises(BmcError, match="(?s)exited with status.*bmc.log.*in use"):
            emulator.start(timeout=10)
    assert not (tmp_path / "bmc.pid").exists()


def test_rejects_inconsistent_systems(tmp_path):
    a, b = _systems(2)
    b.serial = a.serial
    with pytest.raises(ValueError, match="duplicate system serial"):
        BmcEmulator([a, b], 8000, tmp_path, USER, PASSWORD)
    a.macs = ["02:AA:BB:CC:DD:EE"]
    with pytest.raises(ValueError, match="MACs"):
        BmcEmulator([a], 8000, tmp_path, USER, PASSWORD)

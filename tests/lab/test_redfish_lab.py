"""The Redfish layer against the virtual rack's sushy-tools BMCs: real HTTP, basic auth, power
changes that land 1-11 s after they are asked for, virtual media the emulator downloads."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.core.credentials import write_secret_file
from bringup.fleet.store import FleetStore
from bringup.redfish import vmedia
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions

pytestmark = pytest.mark.lab

EMULATOR_WAIT = ("--poll", "0.5", "--graceful-timeout", "15", "--timeout", "30")


@pytest.fixture(scope="module")
def rack_env(lab, tmp_path_factory):
    """(lab state, inventory dir, db path, BMC password) for this module's commands."""
    _, state = lab
    inventory = Path(state.inventory)
    password = (Path(state.state_dir) / "bmc-password").read_text().strip()
    return state, inventory.parent, tmp_path_factory.mktemp("redfish") / "fleet.db", password


def bringup(env, *args: str):
    _, inv_dir, db, _ = env
    return CliRunner(env={"COLUMNS": "250"}).invoke(
        main, ["--db", str(db), "--inventory-dir", str(inv_dir), *args], catch_exceptions=False
    )


def history_text(db: Path) -> str:
    store = FleetStore.open(str(db))
    try:
        return "\n".join(
            json.dumps([e.kind, e.reason, e.details], default=str)
            for n in store.list_nodes()
            for e in store.history(n.name)
        )
    finally:
        store.close()


def test_discover_every_lab_node(rack_env):
    state, _, db, password = rack_env
    result = bringup(rack_env, "discover", "--rack", state.name, "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {n.name for n in state.nodes}
    store = FleetStore.open(str(db))
    for node in state.nodes:
        row = rows[node.name]
        assert row["serial"] == node.serial and row["macs"] == [node.mac], node.name
        assert row["provisioning_nic"]["mac"] == node.mac
        record = store.get_node(node.serial)
        assert (record.name, record.state, record.macs) == (node.name, "discovered", [node.mac])
        hw = record.hardware
        assert hw["bmc"]["vendor"] == "generic" and hw["bmc"]["url"] == node.bmc_address
        assert hw["system"]["uuid"] == node.uuid and hw["system"]["bios_version"]
        assert {f["id"] for f in hw["firmware"]} >= {"BIOS", "BMC"}
        assert hw["event_log"] == [] and hw["event_log_read_at"]  # the lab's SEL is healthy
        # The hardware inventory the lab BMC serves (bringup/lab/bmc_inventory.py), all of it read.
        assert hw["inventory"]["not_reported"] == {} and len(hw["inventory"]["memory"]) == 32
    store.close()
    assert password not in result.output and password not in history_text(db)


def test_power_cycle_waits_for_the_emulator(rack_env):
    state, _, db, _ = rack_env
    nodes = ",".join(n.name for n in state.nodes[:2])
    on = bringup(rack_env, "power", "on", "--rack", state.name, "--nodes", nodes, "--json", *EMULATOR_WAIT)
    assert on.exit_code == 0, on.output
    assert [r["after"] for r in json.loads(on.stdout)] == ["On", "On"]
    cycled = bringup(
        rack_env, "power", "cycle", "--rack", state.name, "--nodes", nodes, "--json", *EMULATOR_WAIT
    )
    assert cycled.exit_code == 0, cycled.output
    for row in json.loads(cycled.stdout):
        assert (row["before"], row["after"]) == ("On", "On")
        assert row["steps"] == ["GracefulShutdown accepted", "On accepted"]
        assert row["seconds"] >= 1  # the emulator applies changes 1-11 s later: it was polled
    store = FleetStore.open(str(db))
    event = store.history(state.nodes[0].name)[-1]
    assert event.kind == "power" and event.reason == "power cycle: On -> On"
    store.close()


def test_one_time_pxe_is_set_and_read_back(rack_env):
    state, *_ = rack_env
    node = state.nodes[2].name
    result = bringup(rack_env, "boot", "pxe", "--rack", state.name, "--nodes", node, "--json")
    assert result.exit_code == 0, result.output
    boot = json.loads(result.stdout)[0]["boot"]
    assert (boot["target"], boot["mode"], boot["verified"]) == ("Pxe", "UEFI", True)
    # sushy-tools reads Once back as Continuous: reported, not hidden.
    assert boot["enabled"] == "Continuous" and "Continuous" in boot["warnings"][0]


@pytest.fixture
def iso_url(tmp_path):
    (tmp_path / "installer.iso").write_bytes(b"\0" * 65536)
    handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/installer.iso"
    finally:
        server.shutdown()
        server.server_close()


def test_virtual_media_insert_and_eject(rack_env, iso_url):
    state, _, _, password = rack_env
    node = state.nodes[3]
    endpoint = BmcEndpoint(node.name, node.bmc_address, "root", password)
    with RedfishClient(endpoint, TransportOptions()) as client:
        ctx = locate(client)
        inserted = vmedia.insert(ctx, iso_url)
        assert inserted.inserted and inserted.image == iso_url
        assert vmedia.status(ctx).inserted
        ejected = vmedia.eject(ctx)
        assert not ejected.inserted and not vmedia.status(ctx).inserted


def test_bad_password_and_dead_bmc_fail_alone(rack_env, tmp_path):
    state, inv_dir, _, password = rack_env
    doc = yaml.safe_load(Path(state.inventory).read_text())
    hosts = doc["all"]["children"][state.name]["hosts"]
    bad, dead = state.nodes[1].name, state.nodes[2].name
    local = tmp_path / "inventories"
    shutil.copytree(inv_dir / "profiles", local / "profiles")
    write_secret_file(local / "good.pass", password + "\n")
    write_secret_file(local / "wrong.pass", "not-the-lab-password\n")
    doc["all"]["vars"]["bmc_password"] = "file:good.pass"
    hosts[bad]["bmc_password"] = "file:wrong.pass"
    # An address on the lab's BMC subnet that no BMC holds.
    hosts[dead]["bmc_address"] = f"http://{state.bmc_subnet.rsplit('.', 1)[0]}.250:{state.bmc_port}"
    (local / "broken.yml").write_text(yaml.safe_dump(doc))
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        main,
        ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(local), "discover", "--rack", "broken"]
        + ["--json", "--connect-timeout", "1", "--retries", "1"],
        catch_exceptions=False,
    )
    assert result.exit_code == 1
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows[bad]["error"]["kind"] == "authentication failed"
    assert rows[dead]["error"]["kind"] == "unreachable"
    others = [n for n in state.nodes if n.name not in (bad, dead)]
    assert all(rows[n.name]["ok"] and rows[n.name]["serial"] == n.serial for n in others)
    text = result.output + history_text(tmp_path / "fleet.db")
    assert password not in text and "not-the-lab-password" not in text

"""Enrolling a rack's inventory hosts: new ones enrolled, known ones refreshed, departed ones named;
and `bringup inventory enroll` saying so."""

from __future__ import annotations

from click.testing import CliRunner

from bringup.cli.main import main
from bringup.fleet.enroll import enroll_hosts
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import load_rack
from tests.paths import REPO


def test_enroll_is_idempotent_refreshes_and_names_departed_nodes(tmp_path, monkeypatch):
    monkeypatch.setenv("R01_BMC_PASSWORD", "x")
    rack, _ = load_rack("r01", REPO / "inventories")
    store = FleetStore.open(str(tmp_path / "fleet.db"))
    store.enroll("gpu099", rack.name, "h100-sxm-8x400g")  # left the rack since
    store.enroll(rack.hosts[0].name, rack.name, "h100-sxm-8x400g", bmc_address="10.9.9.9")

    first = enroll_hosts(store, rack.name, rack.hosts)
    names = [h.name for h in rack.hosts]
    assert (first.new, first.known, first.gone) == (names[1:], names[:1], ["gpu099"])
    assert store.get_node(names[0]).bmc_address == rack.hosts[0].bmc_address  # refreshed

    again = enroll_hosts(store, rack.name, rack.hosts)
    assert (again.new, again.known) == ([], names)
    assert {n.state for n in store.list_nodes(rack=rack.name)} == {"enrolled"}
    store.close()


def test_inventory_enroll_command_reports_the_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("R01_BMC_PASSWORD", "x")
    base = ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(REPO / "inventories")]
    first = CliRunner().invoke(main, [*base, "inventory", "enroll", "r01"])
    assert first.exit_code == 0 and "4 node(s) enrolled, 0 already known" in first.output
    again = CliRunner().invoke(main, [*base, "inventory", "enroll", "r01"])
    assert again.exit_code == 0 and "0 node(s) enrolled, 4 already known" in again.output

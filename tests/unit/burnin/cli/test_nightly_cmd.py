"""`burnin nightly --all` over several racks: a rack whose night cannot run (a broken inventory,
Slurm not answering) or that another nightly holds is reported, and the other racks still run;
the exit status tells a night that could not run from one that ran (the night itself runs
against the lab's real Slurm: tests/lab/test_nightly_lab.py)."""

from __future__ import annotations

from click.testing import CliRunner

from bringup.fleet.store import FleetStore
from burnin.cli import main
from burnin.cli.nightly import EXIT_BUSY, EXIT_ERROR
from burnin.service.nightly_lock import nightly_lock
from tests.inventories import write_rack


def host(i: int) -> dict:
    return {"bmc_address": f"10.9.1.{i}", "rack_unit": i, "ansible_host": f"10.9.0.{i}"}


def test_all_racks_a_broken_rack_and_a_busy_one_are_reported_and_the_others_still_tried(tmp_path):
    inv = tmp_path / "inventories"
    write_rack(inv, "ra", {"gpu001": host(1)}, profile="no-such-profile")  # cannot be loaded
    write_rack(inv, "rb", {"gpu101": host(2)})
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.enroll("gpu001", "ra", "h100-sxm-8x400g")
    store.enroll("gpu101", "rb", "h100-sxm-8x400g")
    argv = ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(inv), "nightly", "--all", "--json"]
    with nightly_lock(store, "rb"):  # another controller's night holds rb
        res = CliRunner().invoke(main, argv)
    # ra's broken inventory does not stop rb's turn: both are said, neither as a traceback
    assert "burnin nightly: rack ra: " in res.stderr and "no-such-profile" in res.stderr, res.output
    assert "another nightly of rack rb is running" in res.stderr, res.output
    # a night that could not run is not a finished night (the systemd unit counts 1 and 2 as such)
    assert res.exit_code == EXIT_ERROR != EXIT_BUSY, res.output
    assert res.stdout.strip() == "[]"


def test_a_busy_rack_alone_exits_busy(tmp_path):
    inv = tmp_path / "inventories"
    write_rack(inv, "rb", {"gpu101": host(2)})
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.enroll("gpu101", "rb", "h100-sxm-8x400g")
    argv = ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(inv), "nightly", "--rack", "rb"]
    with nightly_lock(store, "rb"):
        res = CliRunner().invoke(main, argv)
    assert res.exit_code == EXIT_BUSY and "another nightly of rack rb is running" in res.stderr, res.output

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


def _revalidate(tmp_path, monkeypatch, value: str):
    """`burnin nightly --revalidate VALUE`: the share that reaches the night (the night itself is
    stood in for: it is tested in tests/unit/burnin/service and the lab)."""
    import burnin.cli.nightly as nightly_cli
    from bringup.core.errors import UserError

    inv = tmp_path / "inventories"
    write_rack(inv, "rb", {"gpu101": host(2)})
    FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}").enroll("gpu101", "rb", "h100-sxm-8x400g")
    asked = []

    def night(store, inv, req, say):
        asked.append(req.revalidate_pct)
        raise UserError("stood in")

    monkeypatch.setattr(nightly_cli, "run_nightly", night)
    argv = ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(inv), "nightly", "--rack", "rb"]
    res = CliRunner().invoke(main, [*argv, "--revalidate", value])
    return res, asked


def test_revalidate_takes_a_percentage_with_or_without_its_sign(tmp_path, monkeypatch):
    """Operators write `--revalidate N%`: '5%' was 'not a valid float range'."""
    for value, pct in (("5%", 5.0), ("5", 5.0), ("12.5%", 12.5), ("100%", 100.0), ("0", 0.0)):
        res, asked = _revalidate(tmp_path / value.replace("%", "pct"), monkeypatch, value)
        assert asked == [pct] and res.exit_code == EXIT_ERROR, (value, res.output)


def test_revalidate_refuses_what_is_no_percentage(tmp_path, monkeypatch):
    for i, value in enumerate(("101%", "-1", "5%%", "%", "five", "5 %x", "nan")):
        res, asked = _revalidate(tmp_path / str(i), monkeypatch, value)
        assert res.exit_code == 2 and asked == [], (value, res.output)
        assert "--revalidate" in res.output and "0 to 100" in res.output, (value, res.output)


def test_the_table_is_followed_by_the_plans_notes(capsys):
    # A profile short of golden partners is said when the night starts (stderr) and in the JSON;
    # the table an operator reads at the end (a journal, a mail) says it again after the rows.
    from burnin.cli.nightly import _render
    from burnin.service.nightly import NightlyResult

    note = "profile b: 1 golden partner free of the 2 wanted for g04"
    _render(NightlyResult("r01", run_id=7, notes=[note]))
    printed = capsys.readouterr()
    assert note in " ".join((printed.out + printed.err).split())

"""`burnin breaker status|reset` on a store where a check tripped its breaker."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bringup.fleet import breaker as records
from bringup.fleet.store import FleetStore
from burnin.cli import main as burnin_main


def tripped_store(path) -> None:
    store = FleetStore(f"sqlite:///{path}")
    for i in range(4):
        records.pass_drain(store, "gpu", "gpu_ecc", f"n{i}", window_s=600, allow=lambda d: d < 2)
    records.pass_drain(store, "gpu", "ib_ports", "n9", window_s=600, allow=lambda d: d < 2)
    store.close()


def test_status_names_the_suspect_check_and_how_to_resume_and_exits_1(tmp_path):
    tripped_store(tmp_path / "fleet.db")
    out = tmp_path / "notified.json"
    argv = ["--db", str(tmp_path / "fleet.db"), "breaker", "status", "--json", "--notify", f"cat > {out}"]
    res = CliRunner().invoke(burnin_main, argv)
    assert res.exit_code == 1, res.output
    (row,) = json.loads(res.stdout)
    assert (row["check"], row["partition"], row["drained"], row["held"]) == ("gpu_ecc", "gpu", 2, 2)
    assert row["resume"] == "burnin breaker reset gpu_ecc --partition gpu"
    assert json.loads(out.read_text()) == {"breakers": [row]}
    every = CliRunner().invoke(
        burnin_main, ["--db", str(tmp_path / "fleet.db"), "breaker", "status", "--all"]
    )
    assert every.exit_code == 1 and "ib_ports" in every.output and "TRIPPED" in every.output


def test_reset_closes_it_and_status_is_clear_again(tmp_path):
    tripped_store(tmp_path / "fleet.db")
    base = ["--db", str(tmp_path / "fleet.db"), "breaker"]
    res = CliRunner().invoke(burnin_main, [*base, "reset", "gpu_ecc", "--partition", "gpu"])
    assert res.exit_code == 0 and "reset (tripped at" in res.output, res.output
    res = CliRunner().invoke(burnin_main, [*base, "status", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    res = CliRunner().invoke(burnin_main, [*base, "reset", "gpu_ecc", "--partition", "nope"])
    assert res.exit_code != 0 and "no circuit breaker" in res.output

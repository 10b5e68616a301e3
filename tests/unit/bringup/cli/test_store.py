"""`bringup store prune`: old evidence goes, verdicts and findings stay, and it says what it freed."""

from __future__ import annotations

import json
from datetime import timedelta

from click.testing import CliRunner

from bringup.cli.main import main
from bringup.fleet.models import utcnow
from bringup.fleet.store import FleetStore
from burnin.cli import main as burnin_main

FINDING = {"message": "Xid 79", "severity": "critical", "action": "RMA", "evidence": "", "subject": ""}


def test_prune_dry_run_then_prune_and_the_pruned_evidence_says_so(tmp_path):
    db = tmp_path / "fleet.db"
    store = FleetStore.open(str(db))
    store.enroll("gpu01", "r01", "h100-sxm-8x400g")
    old = utcnow() - timedelta(days=200)
    store.add_result(
        "gpu01", "preflight", "kernel_log", "FAIL", findings=[FINDING], evidence="x" * 100_000, time=old
    )
    store.close()
    runner = CliRunner()

    dry = runner.invoke(
        main, ["--db", str(db), "store", "prune", "--older-than", "180d", "--dry-run", "--json"]
    )
    assert dry.exit_code == 0, dry.output
    doc = json.loads(dry.stdout)
    assert (doc["dry_run"], doc["results"], doc["blobs"], doc["raw_bytes"]) == (True, 1, 1, 100_000)

    done = runner.invoke(main, ["--db", str(db), "store", "prune", "--older-than", "180d"])
    assert done.exit_code == 0, done.output
    assert (
        "1 result(s) and 0 run(s); freed 0.0 MB in the store (1 blob(s) holding 0.1 MB of output"
        in done.stdout
    )

    shown = runner.invoke(burnin_main, ["--db", str(db), "results", "gpu01", "--evidence", "--json"])
    assert shown.exit_code == 0, shown.output
    (result,) = json.loads(shown.stdout)["results"]
    assert result["verdict"] == "FAIL" and result["findings"] == [FINDING]
    assert result["evidence"].startswith("(evidence pruned ") and "bringup store prune" in result["evidence"]


def test_prune_refuses_an_age_it_cannot_read(tmp_path):
    res = CliRunner().invoke(
        main, ["--db", str(tmp_path / "f.db"), "store", "prune", "--older-than", "half a year"]
    )
    assert res.exit_code != 0 and "--older-than 'half a year'" in res.output

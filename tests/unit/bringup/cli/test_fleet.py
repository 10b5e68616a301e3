"""`bringup nodes show`: a node's record, its history and its latest results, as JSON and as text."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bringup.cli.main import main
from bringup.fleet.store import FleetStore

FINDING = {"message": "GPU 3 ECC DBE", "severity": "critical", "action": "RMA", "evidence": "", "subject": ""}


def test_nodes_show_gives_record_history_and_latest_results(tmp_path):
    db = tmp_path / "fleet.db"
    store = FleetStore.open(str(db))
    store.enroll("gpu01", "r01", "h100-sxm-8x400g", bmc_address="10.0.0.11", rack_unit=1)
    store.transition("gpu01", "discovered", "test: found")
    run = store.start_run("burnin", "r01")
    rows = [
        {"stage": "preflight", "check": "gpu_ecc", "verdict": "FAIL", "findings": [FINDING]},
        {"stage": "preflight", "check": "disk_usage", "verdict": "PASS", "metrics": {"used_pct": 12}},
    ]
    store.add_results("gpu01", rows, run_id=run.id)
    store.close()
    runner = CliRunner(env={"COLUMNS": "200"})

    shown = runner.invoke(main, ["--db", str(db), "nodes", "show", "gpu01", "--json"])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.stdout)
    assert (doc["name"], doc["state"], doc["bmc_address"]) == ("gpu01", "discovered", "10.0.0.11")
    assert [(e["kind"], e["from"], e["to"]) for e in doc["history"]][-1] == (
        "transition",
        "enrolled",
        "discovered",
    )
    results = {r["check"]: r for r in doc["results"]}
    assert results["gpu_ecc"]["verdict"] == "FAIL" and results["gpu_ecc"]["findings"] == [FINDING]
    assert results["disk_usage"]["metrics"] == {"used_pct": 12} and results["disk_usage"]["run"] == run.id
    assert "evidence" not in results["gpu_ecc"]

    text = runner.invoke(main, ["--db", str(db), "nodes", "show", "gpu01"])
    assert text.exit_code == 0 and "enrolled -> discovered" in text.stdout and "gpu_ecc" in text.stdout

    missing = runner.invoke(main, ["--db", str(db), "nodes", "show", "gpu09"])
    assert missing.exit_code == 1 and "gpu09" in missing.stderr and "internal error" not in missing.stderr


def test_nodes_history_lists_a_nodes_events_and_filters_them_by_kind(tmp_path):
    """docs/acceptance.md sends an operator to `bringup nodes history` for a node's acceptance
    decisions; the command did not exist."""
    db = tmp_path / "fleet.db"
    store = FleetStore.open(str(db))
    store.enroll("gpu01", "r01", "h100-sxm-8x400g", rack_unit=1)
    store.transition("gpu01", "discovered", "test: found")
    store.record_event(
        "gpu01", "acceptance", "delivery po1, acceptance #4: rejected", details={"decision": "rejected"}
    )
    store.close()
    runner = CliRunner(env={"COLUMNS": "200"})
    every = runner.invoke(main, ["--db", str(db), "nodes", "history", "gpu01", "--json"])
    assert every.exit_code == 0, every.output
    assert [e["kind"] for e in json.loads(every.stdout)][-2:] == ["transition", "acceptance"]
    only = runner.invoke(
        main, ["--db", str(db), "nodes", "history", "gpu01", "--kind", "acceptance", "--json"]
    )
    (decision,) = json.loads(only.stdout)
    assert decision["details"] == {"decision": "rejected"} and "acceptance #4" in decision["reason"]
    text = runner.invoke(main, ["--db", str(db), "nodes", "history", "gpu01"])
    assert text.exit_code == 0 and "enrolled -> discovered" in text.stdout and "acceptance #4" in text.stdout

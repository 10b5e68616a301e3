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


def test_nodes_show_lists_the_gpus_and_pcie_devices_the_bmc_reported(tmp_path):
    """Discovery's ``hardware.gpus`` and ``hardware.pcie_devices`` (docs/redfish.md) as two tables."""
    db = tmp_path / "fleet.db"
    store = FleetStore.open(str(db))
    store.enroll("gpu01", "r01", "h100-sxm-8x400g", bmc_address="10.0.0.11", rack_unit=1)
    gpu = {
        "id": "9",
        "slot": "PCI-E Slot 1",
        "model": "NVIDIA A100-SXM4-40GB",
        "serial": "1323620023536",
        "uuid": None,
        "firmware": "92.00.19.00.10",
        "health": "OK",
        "state": "Enabled",
    }
    nic = {
        "id": "1",
        "name": "MT27800 Family [ConnectX-5]",
        "slot": "Slot 17",
        "class": "NetworkController",
        "vendor_id": "0x15b3",
        "device_id": None,
        "link_width": 16,
        "link_speed": "Gen3",
        "firmware": None,
        "health": "OK",
    }
    store.update_node("gpu01", hardware={"gpus": [gpu], "pcie_devices": [nic]})
    store.close()
    text = CliRunner(env={"COLUMNS": "250"}).invoke(main, ["--db", str(db), "nodes", "show", "gpu01"])
    assert text.exit_code == 0, text.output
    gpus = text.stdout[text.stdout.index("GPUs (1, from the BMC)") :]
    assert "PCI-E Slot 1" in gpus and "1323620023536" in gpus and "92.00.19.00.10" in gpus
    pcie = text.stdout[text.stdout.index("PCIe devices (1, from the BMC)") :]
    assert "Slot 17" in pcie and "0x15b3" in pcie and "x16 Gen3" in pcie


def test_nodes_show_says_which_profile_the_bmcs_gpus_suggest_and_whether_its_own_fits(tmp_path):
    """One line from bringup/profiles/suggest.py (docs/platforms.md, "Profile from discovery")."""
    from tests.paths import REPO

    db = tmp_path / "fleet.db"
    store = FleetStore.open(str(db))
    store.enroll("gpu07", "r01", "h100-sxm-8x400g", rack_unit=7)
    store.enroll("gpu08", "r01", "h100-sxm-8x400g", rack_unit=8)
    a100 = [{"slot": f"PCI-E Slot {i}", "model": "NVIDIA A100-SXM4-40GB"} for i in range(1, 9)]
    h200 = [{"slot": f"GPU{i}", "model": "NVIDIA H200"} for i in range(8)]
    store.update_node("gpu07", hardware={"gpus": h200, "system": {"model": "HGX H200"}})
    store.update_node("gpu08", hardware={"gpus": a100})
    store.enroll("gpu09", "r01", "h100-sxm-8x400g", rack_unit=9)
    store.close()
    runner = CliRunner(env={"COLUMNS": "250"})
    args = ["--db", str(db), "--inventory-dir", str(REPO / "inventories"), "nodes", "show"]

    text = runner.invoke(main, [*args, "gpu07"])
    assert text.exit_code == 0, text.output
    line = next(x for x in text.stdout.splitlines() if x.startswith("profile from the BMC:"))
    assert line.startswith("profile from the BMC: HGX H200: 8 x NVIDIA H200 -> h200-sxm-8x400g; ")
    assert "its profile h100-sxm-8x400g expects 8 x NVIDIA H100 80GB HBM3" in line

    doc = json.loads(runner.invoke(main, [*args, "gpu08", "--json"]).stdout)
    assert doc["profile_from_bmc"]["profiles"] == []
    assert doc["profile_from_bmc"]["why"].startswith("8 x NVIDIA A100-SXM4-40GB -> no profile")
    assert doc["profile_from_bmc"]["mismatch"].startswith(
        "node gpu08: the BMC lists 8 x NVIDIA A100-SXM4-40GB"
    )

    plain = runner.invoke(main, [*args, "gpu09"]).stdout
    assert "profile from the BMC: no GPU list from the BMC" in plain

"""`burnin reliability`, `burnin lemons [--apply]` and `burnin clear-lemon` on a real store and
inventory; a flagged lemon stays out of `burnin golden` until it is cleared."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from bringup.fleet.models import utcnow
from burnin.history.fleet import load_policy
from burnin.history.lemons import LemonPolicy
from tests.unit.burnin.golden.test_rules import RACK, FleetRack
from tests.unit.burnin.history.writer import PastWriter

REPO = Path(__file__).resolve().parents[4]
NOW = utcnow().replace(microsecond=0)


def day(n: float):
    return NOW - timedelta(days=n)


@pytest.fixture
def fleet(tmp_path) -> FleetRack:
    return FleetRack(tmp_path)


def lemon_history(fleet: FleetRack) -> None:
    """gpu001 golden, GPU 5 fails, is replaced, fails again; gpu002 fails once at random."""
    w = PastWriter(fleet.store)
    for node in fleet.store.list_nodes(rack=RACK):
        fleet.store.update_node(node.name, created_at=day(60))  # in the fleet since before the window
    fleet.results("gpu001")
    fleet.results("gpu002")
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    w.fail("gpu001", day(20), "GPU 5")
    w.repair("gpu001", day(19), "GPU 5 replaced")
    w.fail("gpu001", day(16), "GPU 5", message="GPU 5: Xid 79 fallen off the bus")  # 3 days after
    w.repair("gpu001", day(15), "GPU 5 replaced again")
    w.fail("gpu002", day(15), "mlx5_2 port 1", stage="ib", check="ib_ports")
    w.repair("gpu002", day(14), "cable reseated")


def test_reliability_json_from_a_given_rate_reproduces_the_study(fleet):
    res = fleet.run(
        "reliability", "--rack", RACK, "--failure-rate", "6.5", "--job-gpus", "16000",
        "--checkpoint", "5m", "--restart", "5m", "--target-ettr", "0.9", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["gpus_per_node"]["value"] == 8 and "profile" in out["gpus_per_node"]["source"]
    assert out["mttf_hours"]["16384"] == pytest.approx(1.8, rel=0.05)
    assert set(out["mttf_hours"]) == {str(2**k) for k in range(3, 18)}
    assert out["job"]["expected_ettr"] == pytest.approx(0.93, rel=0.05)
    assert out["job"]["checkpoint_needed_minutes"] > 5
    assert out["failure_rate_per_1000_node_days"]["source"] == "given with --failure-rate"


def test_reliability_json_reproduces_the_studys_hourly_checkpoint_example(fleet):
    """The study's other worked example: 16,000 GPUs, a checkpoint every 60 minutes and a 5-minute
    restart give E[ETTR] about 0.7 (the model gives 0.68: within 5% of the study's figure)."""
    res = fleet.run(
        "reliability", "--rack", RACK, "--failure-rate", "6.5", "--job-gpus", "16000",
        "--checkpoint", "60m", "--restart", "5m", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    job = json.loads(res.stdout)["job"]
    assert (job["gpus"], job["checkpoint_minutes"], job["restart_minutes"]) == (16000, 60, 5)
    assert job["expected_ettr"] == pytest.approx(0.7, rel=0.05)
    assert job["expected_ettr"] < 0.93 * 0.95  # an hourly checkpoint costs what the 5-minute one saves


def test_reliability_measures_the_rate_and_its_causes(fleet):
    lemon_history(fleet)
    res = fleet.run("reliability", "--rack", RACK, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["failures"] == 3 and out["nodes"] == 4
    rate = out["failure_rate_per_1000_node_days"]["measured"]
    assert rate == pytest.approx(1000 * 3 / out["node_days"])
    assert out["by_component"]["gpu"]["count"] == 2 and out["by_component"]["hca_port"]["count"] == 1
    assert sum(c["count"] for c in out["top_causes"]) == 3
    assert {"cause": "ib_ports: mlx5_2 port #: uncorrectable ECC error", "count": 1} in out["top_causes"]
    assert {"cause": "gpu_health: GPU #: Xid 79 fallen off the bus", "count": 1} in out["top_causes"]
    text = fleet.run("reliability", "--rack", RACK, "--job-gpus", "1024")
    assert text.exit_code == 0 and "E[ETTR]" in text.stdout and "Kokolis" in text.stdout


def test_reliability_rejects_a_bad_duration(fleet):
    res = fleet.run("reliability", "--checkpoint", "soon")
    assert res.exit_code == 2 and "--checkpoint" in res.output


def test_lemons_apply_flags_a_lemon_out_of_golden_until_cleared(fleet):
    lemon_history(fleet)
    res = fleet.run("lemons", "--rack", RACK, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [lemon["node"] for lemon in out["lemons"]] == ["gpu001"]
    assert "GPU 5 failed again after a repair (2 times" in out["lemons"][0]["summary"]
    assert out["flagged"] == [] and "lemon" not in fleet.store.get_node("gpu001").hardware  # no --apply

    res = fleet.run("lemons", "--rack", RACK, "--apply")
    assert res.exit_code == 0, res.output
    assert "gpu001" in res.stdout and "flagged now: gpu001" in res.stderr
    node = fleet.store.get_node("gpu001")
    assert node.hardware["lemon"]["rules"] == ["same part again"] and node.state == "golden"
    assert node.hardware["bmc"] == {"firmware_version": "7.10.30.00"}  # the rest of the record kept
    assert [e.kind for e in fleet.store.history("gpu001")][-1] == "lemon"
    again = fleet.run("lemons", "--rack", RACK, "--apply")
    assert "already flagged: gpu001" in again.stderr

    fleet.results("gpu001")
    fleet.results("gpu002")
    res = fleet.run("golden", "--rack", RACK)
    assert res.exit_code == 0, res.output
    assert "flagged a lemon" in res.stderr
    assert fleet.store.get_node("gpu001").state != "golden"  # left golden, never retired
    assert fleet.store.get_node("gpu001").state != "retired"
    assert fleet.store.get_node("gpu002").state == "golden"

    res = fleet.run("clear-lemon", "gpu001", "--reason", "baseboard replaced")
    assert res.exit_code == 0, res.output
    assert "lemon" not in fleet.store.get_node("gpu001").hardware
    assert fleet.store.history("gpu001")[-1].kind == "lemon_cleared"
    assert fleet.run("clear-lemon", "gpu001", "--reason", "x").exit_code == 1  # nothing to clear


def test_lemons_reads_the_policy_file(fleet):
    lemon_history(fleet)
    (fleet.dir / "policies").mkdir()
    (fleet.dir / "policies" / "lemons.yml").write_text("same_part_after_repair: false\n")
    out = json.loads(fleet.run("lemons", "--rack", RACK, "--json").stdout)
    assert out["lemons"] == [] and out["policy"]["source"].endswith("lemons.yml")
    (fleet.dir / "policies" / "lemons.yml").write_text("max_repair: 3\n")
    res = fleet.run("lemons", "--rack", RACK)
    assert res.exit_code == 1 and "lemons.yml" in res.output and "max_repair" in res.output


def test_the_shipped_policy_file_is_the_defaults(tmp_path):
    shutil.copytree(REPO / "inventories" / "policies", tmp_path / "policies")
    policy, source = load_policy(tmp_path)
    assert policy == LemonPolicy() and source.endswith("lemons.yml")


def test_reliability_errors_are_one_line(fleet):
    res = fleet.run("reliability", "--rack", "nowhere")
    assert res.exit_code == 1 and "nowhere" in res.output  # a rack to fix, not a usage error
    res = fleet.run("reliability", "--failure-rate", "6.5", "--job-gpus", "64", "--target-ettr", "1.5")
    assert res.exit_code == 1 and "between 0 and 1" in res.output and "Traceback" not in res.output
    res = fleet.run("reliability", "--failure-rate", "-2")
    assert res.exit_code == 1 and "cannot be negative" in res.output


def test_reliability_no_sacct_counts_the_store_alone(fleet):
    lemon_history(fleet)
    out = json.loads(fleet.run("reliability", "--rack", RACK, "--no-sacct", "--json").stdout)
    assert out["slurm_accounting"] == "not read" and out["slurm_failures"] == []
    assert out["failures_by_source"] == {
        "store": 3,
        "sacct": 0,
        "sacct_node_fail_runs_counted_from_store": 0,
    }
    text = fleet.run("reliability", "--rack", RACK, "--no-sacct")
    assert "failures from the store 3, only in Slurm accounting 0" in text.stdout

"""`burnin rejudge` on a real lab burn-in.

Four nodes, node03 with a degraded IB port (mlx5_3 at ~60% of line rate). The ib stage runs
with a floor of half the line rate (400 Gb/s both ways), so every port passes. Then the lab is taken down (no node
can be reached any more) and `burnin rejudge --set floors.ib_write_bw_fraction=0.97` judges the
run again from its stored evidence: node03's mlx5_3 now fails, blamed by agreement as the live
stage would, the other ports still pass, and the original results are as they were."""

from __future__ import annotations

import json
import uuid
import zlib

import pytest
from click.testing import CliRunner

from bringup.fleet.run_list import list_runs
from burnin.cli import main as burnin_main
from tests.lab.conftest import lab_inventory_dir, ready_for_burnin, require_root

pytestmark = pytest.mark.lab

NODES = ["node01", "node02", "node03", "node04"]
DEGRADED = ("node03", "mlx5_3")  # the fault ib-port-degraded (catalog.json)


def test_a_raised_ib_floor_fails_the_slow_port_without_running_anything(tmp_path):
    require_root()
    from bringup.lab.rack import VirtualRack

    inv = lab_inventory_dir(tmp_path / "inventories")
    name = f"j{uuid.uuid4().hex[:7]}"
    spec = tmp_path / "faults.yml"
    spec.write_text(f"nodes:\n  {DEGRADED[0]}: [ib-port-degraded]\n")
    lab = VirtualRack(name, tmp_path / "state", inv, services=lambda: [])
    try:
        lab.up(len(NODES), spec)
        base, store = ready_for_burnin(name, inv, tmp_path / "fleet.db", NODES)
        low = ["--set", "diag.ib_load_seconds=2", "--set", "floors.ib_write_bw_fraction=0.5"]
        low += ["--set", "floors.ib_write_bw_bidir_gbps=400"]
        res = CliRunner().invoke(
            burnin_main, [*base, "run", "--rack", name, "--stages", "ib", "--json", *low]
        )
        assert res.exit_code == 0, res.output
        assert {o["node"]: o["verdict"] for o in json.loads(res.stdout)} == dict.fromkeys(NODES, "PASS")
    finally:
        lab.down()  # from here on no node answers: a rejudge that tried SSH would fail

    (burnin_run,) = [r for r in list_runs(store, name) if r.kind == "burnin"]
    runs_before = {r.id for r in list_runs(store, None, limit=None)}
    before = {
        n: [(r.id, r.verdict, r.findings, r.evidence_id) for r in store.latest_results(n)] for n in NODES
    }
    args = [*base, "rejudge", "--run", str(burnin_run.id), "--json"]
    res = CliRunner().invoke(burnin_main, [*args, "--set", "floors.ib_write_bw_fraction=0.97"])
    assert res.exit_code == 1, res.output  # a verdict got worse
    done = json.loads(res.stdout)
    by_node = {r["node"]: r for r in done["results"]}
    assert {n: (r["old"], r["new"]) for n, r in by_node.items()} == {
        "node01": ("PASS", "PASS"),
        "node02": ("PASS", "PASS"),
        "node03": ("PASS", "FAIL"),
        "node04": ("PASS", "PASS"),
    }
    node, hca = DEGRADED
    (finding,) = by_node[node]["new_findings"]
    assert f"{node} {hca} port 1" in finding and "floor 388 Gb/s" in finding
    assert done["summary"] == {
        "results": 4, "rejudged": 4, "changed": 1, "worse": 1, "better": 0, "cannot_rejudge": 0, "superseded": 0
    }  # fmt: skip

    (rejudge,) = [
        r for r in list_runs(store, None, limit=None) if r.id not in runs_before
    ]  # nothing else ran
    assert rejudge.kind == "rejudge" and not rejudge.nodes  # it claimed no node
    assert rejudge.id == done["run"] and rejudge.status == "failed"
    assert store.get_run(rejudge.id).params["of_run"] == burnin_run.id
    assert store.get_run(rejudge.id).params["set"] == ["floors.ib_write_bw_fraction=0.97"]
    # The new result is the node's latest, on the same evidence; the original is untouched.
    (now,) = [r for r in store.latest_results(node) if r.check == "ib_bandwidth"]
    assert (
        now.run_id == rejudge.id and now.verdict == "FAIL" and now.metrics["ports"][hca]["verdict"] == "FAIL"
    )
    (was,) = [r for r in before[node] if r[1] == "PASS"]
    assert now.evidence_id == was[3]
    text = store.evidence(now)
    record = text[text.rfind("@@burnin-ib-record") :]
    print(  # what keeping the record costs, per node (figures for the notes)
        f"ib evidence of {node}: {len(text.encode()) / 1024:.1f} KiB, of which the record "
        f"{len(record.encode()) / 1024:.1f} KiB; zlib {len(zlib.compress(text.encode(), 6)) / 1024:.1f} KiB"
    )
    with store.reading() as s:
        from bringup.fleet.models import CheckResult

        originals = [s.get(CheckResult, rid) for n in NODES for rid, *_ in before[n]]
        assert [(r.id, r.verdict, r.findings, r.evidence_id) for r in originals] == [
            row for n in NODES for row in before[n]
        ]
    # The same run judged again with its own floor changes nothing.
    res = CliRunner().invoke(
        burnin_main, [*base, "rejudge", "--run", str(burnin_run.id), "--dry-run", "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["summary"]["changed"] == 0

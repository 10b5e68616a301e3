"""burnin/golden/topology.py and the NVLink domain in the golden exports: Slurm's topology/block file, one block per NVL72 domain
(https://slurm.schedmd.com/topology.conf.html), and the clique in the JSON (docs/golden.md)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import jsonschema
import pytest

from bringup.fleet.models import CheckResult, Node
from burnin.golden import export
from burnin.golden.export import expand_hostlist
from burnin.golden.rules import GoldenRules, NodeFacts, judge
from burnin.stages import STAGE_ORDER

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
RACK_A = "9c6f5af3-53bf-49b5-a436-b66766c413c3"
RACK_B = "0d1e2f30-4a5b-4c6d-8e7f-8091a2b3c4d5"


def fabric(clique: str | None, cluster: str | None, hours: float = 2) -> CheckResult:
    metrics: dict = {"states": {"Completed": 4}}
    if clique is not None:
        metrics |= {"clique_id": clique, "cluster_uuid": cluster}
    return CheckResult(
        stage="preflight",
        check="gpu_fabric_state",
        verdict="PASS",
        time=NOW - timedelta(hours=hours),
        run_id=3,
        metrics=metrics,
    )


def golden_node(name: str, *fabric_rows: CheckResult) -> dict:
    rows = [
        CheckResult(stage=s, check=f"{s}_check", verdict="PASS", time=NOW - timedelta(hours=2), run_id=3)
        for s in STAGE_ORDER
    ] + list(fabric_rows)
    node = Node(name=name, serial=f"SN-{name}", rack="r09", profile="h100-sxm-8x400g", state="golden")
    fact = NodeFacts(name, node, None, {}, rows)
    return export.golden_record(fact, judge(name, "golden", rows, GoldenRules(), NOW), GoldenRules(), "s")


META = export.ExportMeta("r09", NOW, "sqlite:////var/lib/fleet.db", (GoldenRules(),))


def lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if not x.startswith("#")]


def test_a_node_takes_the_domain_of_its_latest_fabric_result():
    old, new = fabric("1", RACK_B, hours=30), fabric("4026", RACK_A, hours=1)
    assert golden_node("gpu001", old, new)["nvlink_domain"] == {"cluster_uuid": RACK_A, "clique_id": "4026"}
    assert golden_node("gpu001")["nvlink_domain"] is None  # never judged: no domain
    assert golden_node("gpu001", fabric(None, None))["nvlink_domain"] is None  # an HGX node: CliqueId 0


def test_one_block_per_nvlink_domain_with_its_nodes():
    nodes = [golden_node(f"gpu{i:03d}", fabric("4026", RACK_A)) for i in range(1, 19)]
    nodes += [golden_node(f"gpu{i:03d}", fabric("7", RACK_B)) for i in range(19, 37)]
    text = export.render("topology-block", META, nodes, [])
    blocks = lines(text)
    assert blocks == [
        f"BlockName=nvl-{RACK_A}-4026 Nodes=gpu[001-018]",
        f"BlockName=nvl-{RACK_B}-7 Nodes=gpu[019-036]",
    ]
    assert expand_hostlist(blocks[1].split("Nodes=")[1]) == [f"gpu{i:03d}" for i in range(19, 37)]
    assert f"# nvl-{RACK_A}-4026: ClusterUUID {RACK_A}, CliqueId 4026, 18 node(s)" in text


def test_nodes_with_no_domain_are_left_out_of_every_block_and_said_so():
    nodes = [golden_node("gpu001", fabric("4026", RACK_A)), golden_node("gpu002"), golden_node("gpu003")]
    text = export.render("topology-block", META, nodes, [])
    assert lines(text) == [f"BlockName=nvl-{RACK_A}-4026 Nodes=gpu001"]
    assert "# no NVLink domain, in no block: gpu[002-003]" in text


def test_no_domain_at_all_writes_no_block():
    text = export.render("topology-block", META, [golden_node("gpu001")], [])
    assert lines(text) == [] and "# no NVLink domain, in no block: gpu001" in text


def test_a_domain_id_from_the_store_cannot_break_the_block_line():
    node = golden_node("gpu001", fabric("40 26\nBlockName=x", "u u"))
    assert lines(export.render("topology-block", META, [node], [])) == [
        "BlockName=nvl-u_u-40_26_BlockName_x Nodes=gpu001"
    ]


def test_a_name_slurm_cannot_read_refuses_the_export():
    node = golden_node("gpu 1", fabric("4026", RACK_A))
    with pytest.raises(export.ExportError, match="gpu 1"):
        export.render("topology-block", META, [node], [])


def test_the_json_carries_the_domain_and_validates():
    node = golden_node("gpu001", fabric("4026", RACK_A))
    doc = json.loads(export.render("json", META, [node, golden_node("gpu002")], []))
    jsonschema.validate(doc, export.json_schema())
    assert doc["nodes"][0]["nvlink_domain"] == {"cluster_uuid": RACK_A, "clique_id": "4026"}
    assert doc["nodes"][1]["nvlink_domain"] is None


def test_the_block_file_reads_no_evidence():
    assert not export.needs_hardware("topology-block")


def test_cli_writes_the_block_file_from_the_stored_fabric_results(tmp_path):
    from bringup.fleet.models import utcnow
    from tests.unit.burnin.golden.test_rules import RACK, FleetRack

    fleet = FleetRack(tmp_path)
    for name, domain in (("gpu001", ("4026", RACK_A)), ("gpu002", ("4026", RACK_A)), ("gpu003", None)):
        run = fleet.results(name)
        metrics = {"clique_id": domain[0], "cluster_uuid": domain[1]} if domain else {}
        row = {"stage": "preflight", "check": "gpu_fabric_state", "verdict": "PASS", "metrics": metrics}
        fleet.store.add_results(
            name, [{**row, "findings": [], "evidence": "x", "time": utcnow()}], run_id=run
        )
    res = fleet.run("golden", "--rack", RACK, "--format", "topology-block")
    assert res.exit_code == 0, res.output
    assert lines(res.stdout) == [f"BlockName=nvl-{RACK_A}-4026 Nodes=gpu[001-002]"]
    assert "# no NVLink domain, in no block: gpu003" in res.stdout


def test_blocks_keep_the_order_of_their_first_node():
    from burnin.golden import topology

    records = [
        {"name": "b1", "nvlink_domain": {"cluster_uuid": RACK_B, "clique_id": "7"}},
        {"name": "a1", "nvlink_domain": {"cluster_uuid": RACK_A, "clique_id": "1"}},
        {"name": "x", "nvlink_domain": None},
        {"name": "b2", "nvlink_domain": {"cluster_uuid": RACK_B, "clique_id": "7"}},
    ]
    blocks, outside = topology.blocks_of(records)
    assert [(b.name, b.nodes) for b in blocks] == [
        (f"nvl-{RACK_B}-7", ("b1", "b2")),
        (f"nvl-{RACK_A}-1", ("a1",)),
    ]
    assert outside == ["x"]

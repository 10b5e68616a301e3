"""Exports: Slurm hostlists (compress/expand), atomic writes, and every format's content."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bringup.fleet.models import CheckResult, Node
from burnin.golden import export
from burnin.golden.export import compress_hostlist, expand_hostlist
from burnin.golden.rules import Decision, GoldenRules, NodeFacts, judge
from burnin.stages import STAGE_ORDER
from tests.unit.burnin.golden.test_rules import RACK, SAMPLES, FleetRack

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)

# ---- hostlists -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "names, text",
    [
        (["gpu001", "gpu002", "gpu003", "gpu004", "gpu007"], "gpu[001-004,007]"),
        (["gpu007"], "gpu007"),
        (["node10", "node9", "node08"], "node[08,9-10]"),  # node08 and node9 differ in width
        (["n098", "n099", "n100", "n101"], "n[098-101]"),  # a padded range may outgrow its width
        (["a1", "b2", "a2", "login", "b3"], "a[1-2],b[2-3],login"),
        (["gpu001", "gpu001", "gpu002"], "gpu[001-002]"),  # duplicates once
        (["x1", "x01"], "x[1,01]"),  # distinct names with the same number
        (["rack1-node05", "rack1-node06", "rack2-node05"], "rack1-node[05-06],rack2-node05"),
        (["123", "node-a"], "123,node-a"),  # no prefix or no number: as they are
        ([], ""),
    ],
)
def test_compress(names, text):
    assert compress_hostlist(names) == text
    assert sorted(expand_hostlist(text)) == sorted(set(names))


@pytest.mark.parametrize(
    "text, names",
    [
        ("gpu[001-003,007],login", ["gpu001", "gpu002", "gpu003", "gpu007", "login"]),
        ("n[9-11]", ["n9", "n10", "n11"]),
        ("n[01-3]", ["n01", "n02", "n03"]),  # the first number's width, as scontrol
        ("n[1-03]", ["n1", "n2", "n3"]),
        ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
        ("[1-2]", ["1", "2"]),
        ("node[1-2],,node3 node4", ["node1", "node2", "node3", "node4"]),
        ("", []),
    ],
)
def test_expand(text, names):
    assert expand_hostlist(text) == names


@pytest.mark.parametrize(
    "text", ["node[1-2", "node]", "node[]", "node[a-b]", "n[3-1]", "a[1-2]b", "n[[1]]", "n[1-99999999]"]
)
def test_expand_rejects(text):
    with pytest.raises(ValueError):
        expand_hostlist(text)


def test_names_that_cannot_be_in_a_hostlist():
    for bad in ("a,b", "a[1]", "a b"):
        with pytest.raises(ValueError):
            compress_hostlist([bad])


host_names = st.builds(
    lambda prefix, number, width: f"{prefix}{str(number).zfill(width)}",
    st.sampled_from(["gpu", "node", "r1n", "a-", "x"]),
    st.integers(min_value=0, max_value=1200),
    st.integers(min_value=1, max_value=4),
) | st.sampled_from(["login", "head", "n-a"])


@given(st.lists(host_names, max_size=60))
def test_round_trip(names):
    text = compress_hostlist(names)
    expanded = expand_hostlist(text)
    assert sorted(expanded) == sorted(set(names))
    assert len(expanded) == len(set(names))
    assert compress_hostlist(expanded) == text  # stable


# ---- records -------------------------------------------------------------------------------------


def facts(rows, hardware=None, host_vars=None, ip=None):
    node = Node(
        name="gpu001",
        serial="SN1",
        rack="r09",
        profile="h100-sxm-8x400g",
        state="golden",
        ip=ip,
        hostname=None,
        rack_unit=1,
        macs=[],
        hardware=hardware or {},
    )
    return NodeFacts("gpu001", node, None, host_vars or {}, rows)


def test_hcas_from_the_ibstat_evidence_skip_ethernet_ports():
    ibstat = (SAMPLES / "ibstat_h100_ethernet_ports_disabled.txt").read_text()
    row = CheckResult(stage="preflight", check="ib_ports", verdict="PASS", time=NOW, metrics={})
    fact = facts([row])
    fact.evidence["ib_ports"] = ibstat  # as golden.gather reads it for the exports
    hcas = export.hcas_of(fact)
    names = [h["name"] for h in hcas]
    assert not {"mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"} & set(names)  # the Ethernet ones
    assert len(hcas) == 8 and all(h["node_guid"].startswith("0x") and h["port_guids"] for h in hcas)
    assert {h["firmware"] for h in hcas} == {"28.39.1002"}


def test_hcas_from_the_ibstat_evidence_skip_a_storage_hca_of_the_same_link_layer():
    """A B300 node's 4-port ConnectX-7 (MT4129) at 100 Gb/s InfiniBand is not its compute fabric
    (the profile's ib.ca_types: MT4131): the export lists the 8 ConnectX-8 rails only."""
    from bringup.profiles.load import load_profile
    from tests.paths import REPO

    ibstat = (SAMPLES / "ibstat_b300_xe9780_8x_cx8_800g_cx7_100g_storage_DERIVED.txt").read_text()
    row = CheckResult(stage="preflight", check="ib_ports", verdict="PASS", time=NOW, metrics={})
    fact = facts([row])
    fact.profile, _ = load_profile("b300-sxm-8x800g", REPO / "inventories" / "profiles")
    fact.evidence["ib_ports"] = ibstat
    names = [h["name"] for h in export.hcas_of(fact)]
    assert sorted(names) == sorted(f"mlx5_{i}" for i in (0, 1, 6, 7, 8, 9, 10, 11))
    assert {h["firmware"] for h in export.hcas_of(fact)} == {"40.46.5500"}


def test_hcas_fall_back_to_what_the_bmc_reported():
    hw = {"infiniband": [{"id": "IB.1", "adapter": "NIC.Slot.1", "port_guid": "0x1", "node_guid": "0x2"}]}
    assert export.hcas_of(facts([], hardware=hw)) == [
        {"name": "IB.1", "node_guid": "0x2", "port_guids": ["0x1"], "firmware": None}
    ]


def test_address_prefers_the_store_ip_then_ansible_host():
    assert export.address_of(facts([], ip="10.0.0.5", host_vars={"ansible_host": "10.1.1.1"})) == "10.0.0.5"
    assert export.address_of(facts([], host_vars={"ansible_host": "10.1.1.1"})) == "10.1.1.1"
    assert export.address_of(facts([])) == "gpu001"
    assert export.address_of(facts([], ip="10.0.0.5"), "name") == "gpu001"


def _records():
    rows = [
        CheckResult(stage=s, check=f"{s}_check", verdict="PASS", time=NOW - timedelta(hours=2), run_id=3)
        for s in STAGE_ORDER
    ] + [
        CheckResult(
            stage="preflight",
            check="gpu_inventory",
            verdict="PASS",
            time=NOW - timedelta(hours=2),
            run_id=3,
            metrics={"uuids": ["GPU-a", "GPU-b"]},
        )
    ]
    f = facts(rows, host_vars={"ansible_host": "10.9.0.1"})
    d = judge("gpu001", "golden", rows, GoldenRules(), NOW)
    golden = export.golden_record(f, d, GoldenRules(), "sqlite:////var/lib/fleet.db")
    bad = Decision(
        "gpu002", "failed", False, ("state failed (x)", "stage gpu FAIL (run 4): gpu_stress: y -> RMA")
    )
    excluded = export.excluded_record(NodeFacts("gpu002", None, None, {}, []), bad)
    meta = export.ExportMeta("r09", NOW, "sqlite:////var/lib/fleet.db", (GoldenRules(),))
    return meta, golden, excluded


def test_every_format_carries_its_origin():
    meta, golden, excluded = _records()
    for fmt in export.FORMATS:
        for want_excluded in (False, True):
            text = export.render(fmt, meta, [golden], [excluded], want_excluded)
            assert "2026-11-22T12:00:00+00:00" in text and "sqlite:////var/lib/fleet.db" in text, fmt


def test_hostfile_and_slurm():
    meta, golden, excluded = _records()
    hostfile = export.render("hostfile", meta, [golden], [excluded])
    assert [x for x in hostfile.splitlines() if not x.startswith("#")] == ["10.9.0.1 slots=1"]
    slurm = export.render("slurm", meta, [golden], [excluded]).splitlines()
    assert slurm[-1] == "gpu001" and all(x.startswith("#") for x in slurm[:-1])
    exclude = export.render("slurm", meta, [golden], [excluded], True).splitlines()
    assert exclude[-1] == "gpu002"
    assert (
        "# gpu002 (not enrolled): state failed (x); stage gpu FAIL (run 4): gpu_stress: y -> RMA" in exclude
    )
    text = export.render("hostfile", meta, [golden], [excluded], True)
    assert (
        text.splitlines()[-1]
        == "gpu002\tnot enrolled\tstate failed (x); stage gpu FAIL (run 4): gpu_stress: y -> RMA"
    )


def test_csv_reads_back():
    meta, golden, excluded = _records()
    text = export.render("csv", meta, [golden], [excluded])
    rows = list(
        csv.DictReader(io.StringIO("".join(x + "\n" for x in text.splitlines() if not x.startswith("#"))))
    )
    assert len(rows) == 1 and rows[0]["name"] == "gpu001" and rows[0]["gpu_uuids"] == "GPU-a GPU-b"
    assert rows[0]["golden_run"] == "3" and rows[0]["evidence_runs"] == "3"
    text = export.render("csv", meta, [golden], [excluded], True)
    rows = list(
        csv.DictReader(io.StringIO("".join(x + "\n" for x in text.splitlines() if not x.startswith("#"))))
    )
    assert rows[0]["name"] == "gpu002" and rows[0]["reasons"].startswith("state failed (x); stage gpu FAIL")


def test_json_validates_against_the_shipped_schema():
    meta, golden, excluded = _records()
    doc = json.loads(export.render("json", meta, [golden], [excluded]))
    schema = export.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema)
    assert doc["counts"] == {"golden": 1, "excluded": 1, "total": 2}
    assert doc["nodes"][0]["gpu_uuids"] == ["GPU-a", "GPU-b"]
    assert doc["nodes"][0]["evidence"] == {
        "store": "sqlite:////var/lib/fleet.db",
        "run_ids": [3],
        "show": "burnin results gpu001",
    }
    broken = json.loads(json.dumps(doc))
    del broken["nodes"][0]["serial"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_cli_json_export_validates_and_redacts_the_store_password(tmp_path, monkeypatch):
    fleet = FleetRack(tmp_path)
    fleet.results("gpu001")
    fleet.results("gpu002", fail="pcie")
    out = tmp_path / "exports" / "golden.json"
    res = fleet.run("golden", "--rack", RACK, "--format", "json", "--output", str(out))
    assert res.exit_code == 0, res.output
    assert res.stdout == "" and f"wrote {out}" in res.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, export.json_schema())
    (node,) = doc["nodes"]
    assert node["name"] == "gpu001" and node["serial"] == "SN-001" and node["state"] == "golden"
    assert node["gpu_uuids"] == [f"GPU-gpu001-{i}" for i in range(8)]
    assert len(node["hca_guids"]) == 8 and node["firmware"]["hca"] == ["28.39.1002"]
    assert node["firmware"]["gpu_driver"] == "535.183.01" and node["firmware"]["bmc"] == "7.10.30.00"
    assert node["golden"]["since"] and node["golden"]["run_id"] == max(node["golden"]["runs"].values())
    assert {e["name"] for e in doc["excluded"]} == {"gpu002", "gpu003", "gpu004"}
    # a PostgreSQL URL's password never reaches an export
    meta = export.ExportMeta("r", NOW, "postgresql://bringup:***@db/fleet", (GoldenRules(),))
    from bringup.fleet.store import redact_url

    assert redact_url("postgresql://bringup:hunter2@db/fleet") == "postgresql://bringup:***@db/fleet"
    assert "hunter2" not in export.render("json", meta, [], [])


def test_unknown_format():
    meta, golden, excluded = _records()
    with pytest.raises(ValueError, match="unknown export format"):
        export.render("yaml", meta, [golden], [excluded])


def test_schema_is_package_data():
    path = Path(export.__file__).parents[1] / "schemas" / "golden.schema.json"
    assert path.is_file() and export.json_schema()["properties"]["schema"]["const"] == export.SCHEMA_ID
    pyproject = (Path(export.__file__).parents[2] / "pyproject.toml").read_text()
    assert '"burnin" = ["schemas/*.json"]' in pyproject

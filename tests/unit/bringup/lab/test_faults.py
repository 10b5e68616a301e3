"""Fault spec parsing and validation: errors name the file, the node and the fault/field."""

from __future__ import annotations

import pytest

from bringup.lab.faults import FaultSpec, FaultSpecError, load_fault_spec, parse_fault_spec
from bringup.lab.standins import known_faults
from tests.paths import REPO

FAULTS_DIR = REPO / "inventories" / "faults"


def test_parse_valid_spec():
    spec = parse_fault_spec(
        {
            "nodes": {
                "node02": ["gpu-hw-slowdown"],
                "node05": ["pcie-nic-downtrained", "ecc-disabled"],
                "node06": [],
                "node07": None,
            }
        },
        "x.yml",
    )
    assert spec.faults_for("node02") == ("gpu-hw-slowdown",)
    assert spec.faults_for("node05") == ("pcie-nic-downtrained", "ecc-disabled")
    assert spec.faults_for("node06") == () == spec.faults_for("node07") == spec.faults_for("node99")
    assert spec.faulty_nodes() == ["node02", "node05"]
    assert spec.source == "x.yml"


def test_spec_is_read_only():
    spec = parse_fault_spec({"nodes": {"n1": ["nvlink-down"]}})
    with pytest.raises(TypeError):
        spec.nodes["n2"] = ("nvlink-down",)  # type: ignore[index]


@pytest.mark.parametrize("data", [None, {}, {"nodes": None}, {"nodes": {}}])
def test_empty_specs_mean_no_faults(data):
    assert parse_fault_spec(data).nodes == {}


@pytest.mark.parametrize(
    ("data", "node", "field", "text"),
    [
        (
            {"nodes": {"node02": ["gpu-hw-slowdwn"]}},
            "node02",
            "gpu-hw-slowdwn",
            "did you mean 'gpu-hw-slowdown'",
        ),
        ({"nodes": {"node02": ["bogus"]}}, "node02", "bogus", "unknown fault 'bogus'"),
        ({"nodes": {"node03": "gpu-hw-slowdown"}}, "node03", "faults", "must be a list"),
        ({"nodes": {"node03": [7]}}, "node03", "faults", "must be strings"),
        ({"nodes": {"node04": ["nvlink-down", "nvlink-down"]}}, "node04", "nvlink-down", "listed twice"),
        (
            {"nodes": {"node04": ["nvlink-down", "nvlink-degraded"]}},
            "node04",
            "nvlink-down",
            "no recording combines",
        ),
        ({"nodes": ["node02"]}, None, "nodes", "must be a mapping"),
        ({"nodes": {}, "node02": ["x"]}, None, "node02", "unknown field"),
        (["node02"], None, None, "top level must be a mapping"),
        ({"nodes": {5: ["nvlink-down"]}}, None, "nodes", "node names) must be"),
    ],
)
def test_invalid_specs_name_file_node_and_field(data, node, field, text):
    with pytest.raises(FaultSpecError) as info:
        parse_fault_spec(data, "inventories/faults/bad.yml")
    err = info.value
    message = str(err)
    assert message.startswith("inventories/faults/bad.yml: ")
    assert text in message
    assert err.node == node and err.field == field
    if node:
        assert f"node {node!r}" in message
    if field and field != "faults":
        assert field in message


def test_load_reports_yaml_errors_and_missing_files(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("nodes:\n  node02: [gpu-hw-slowdown\n")
    with pytest.raises(FaultSpecError, match=rf"^{bad}: not valid YAML"):
        load_fault_spec(bad)
    with pytest.raises(FaultSpecError, match="cannot read"):
        load_fault_spec(tmp_path / "missing.yml")
    typo = tmp_path / "typo.yml"
    typo.write_text("nodes:\n  node05: [pcie-nic-downtraned]\n")
    with pytest.raises(FaultSpecError, match=rf"^{typo}: node 'node05': unknown fault 'pcie-nic-downtraned'"):
        load_fault_spec(typo)


def test_shipped_specs_are_valid():
    demo = load_fault_spec(FAULTS_DIR / "demo.yml")
    assert len(demo.faulty_nodes()) == 2
    assert load_fault_spec(FAULTS_DIR / "none.yml").faulty_nodes() == []
    for path in FAULTS_DIR.glob("*.yml"):
        spec = load_fault_spec(path)
        assert isinstance(spec, FaultSpec)
        assert {f for faults in spec.nodes.values() for f in faults} <= set(known_faults())

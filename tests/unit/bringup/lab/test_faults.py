"""Fault spec parsing and validation: errors name the file, the node and the fault/field."""

from __future__ import annotations

import json
import re

import pytest

from bringup.lab.faults import (
    FaultSpec,
    FaultSpecError,
    FaultSwitchError,
    fault_file_text,
    kernel_log_faults,
    load_fault_spec,
    parse_fault_spec,
    switch_fault,
)
from bringup.lab.standins import known_faults
from bringup.lab.standins.catalog_file import platforms
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
        # demo-<profile>.yml is the demo of a lab platform (standins/platforms/<profile>.json)
        platform = path.stem.removeprefix("demo-") if path.stem.removeprefix("demo-") in platforms() else None
        spec = load_fault_spec(path, platform)
        assert isinstance(spec, FaultSpec)
        assert {f for faults in spec.nodes.values() for f in faults} <= set(known_faults(platform))


# --- switching a fault on a running node (`bringup lab fault`) -----------------------------------

NOW = "2026-11-28T16:50:01,123456+00:00"


def test_a_kernel_log_fault_switched_on_is_logged_at_the_time_given():
    assert switch_fault({"faults": []}, "node01", "add", "xid-79", NOW) == {
        "faults": ["xid-79"],
        "logged_at": {"xid-79": NOW},
    }


def test_a_fault_without_kernel_log_lines_gets_no_stamp_and_keeps_the_others():
    before = {"faults": ["xid-79"], "logged_at": {"xid-79": NOW}}
    after = switch_fault(before, "node01", "add", "gpu-missing", "2026-11-28T17:00:00,000000+00:00")
    assert after == {"faults": ["xid-79", "gpu-missing"], "logged_at": {"xid-79": NOW}}
    assert before == {"faults": ["xid-79"], "logged_at": {"xid-79": NOW}}  # not changed in place


def test_removed_the_fault_and_its_stamp_go_and_the_file_is_as_lab_up_writes_it():
    after = switch_fault(
        {"faults": ["xid-79"], "logged_at": {"xid-79": NOW}}, "node01", "remove", "xid-79", NOW
    )
    assert after == {"faults": []}
    assert fault_file_text(after) == json.dumps({"faults": []}, indent=2) + "\n"  # install_standins' form


def test_kernel_log_faults_are_those_whose_dmesg_lines_the_catalog_marks():
    assert kernel_log_faults() == {"xid-79", "xid-48-row-remap-pending"}


def test_an_unknown_fault_is_refused_with_the_known_ones_listed():
    with pytest.raises(FaultSwitchError) as err:
        switch_fault({"faults": []}, "node01", "add", "xid-97", NOW)
    message = str(err.value)
    assert message.startswith("unknown fault 'xid-97'; did you mean 'xid-79'?")
    assert all(name in message for name in known_faults())


@pytest.mark.parametrize(
    ("data", "action", "fault", "said"),
    [
        ({"faults": ["xid-79"]}, "add", "xid-79", "fault 'xid-79' is already on node01"),
        (
            {"faults": ["gpu-missing"]},
            "remove",
            "xid-79",
            "fault 'xid-79' is not on node01 (on it: gpu-missing)",
        ),
        ({"faults": ["nvlink-down"]}, "add", "nvlink-degraded", "no recording combines them"),
        ({"faults": []}, "add", "pcie-nic-downtrained", "fake sysfs tree"),
        ({"faults": []}, "add", "unreachable", "give it in the fault spec of `bringup lab up --faults`"),
        ({"faults": []}, "add", "bmc-psu-failed", "the BMC reads its faults"),
    ],
)
def test_switches_that_cannot_be_made_are_refused_saying_why(data, action, fault, said):
    with pytest.raises(FaultSwitchError, match=re.escape(said)):
        switch_fault(data, "node01", action, fault, NOW)

"""The gpu stage's single-node NVLink all-reduce (nccl_local) and host<->device copy bandwidth
(copy_bandwidth) on the virtual rack: real SSH, the stand-ins' recorded outputs. The healthy node
passes both; nvlink-slow-allreduce is caught by nccl_local and gpu-h2d-slow by copy_bandwidth
(naming GPU 5), each at the gpu stage and by no other check."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import faulted_rack

pytestmark = pytest.mark.lab

NODE_FAULT = {"node01": None, "node02": "nvlink-slow-allreduce", "node03": "gpu-h2d-slow"}
FAILING = {"node02": {"nccl_local": "RESEAT"}, "node03": {"copy_bandwidth": "RESEAT"}}
QUICK = ["--set", "diag.stress_minutes=0.05", "--set", "diag.pcie_load_seconds=5"]


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    with faulted_rack(tmp_path_factory.mktemp("gpuchecks"), "g", NODE_FAULT) as up:
        yield up


def test_each_fault_is_caught_by_its_gpu_stage_check_and_the_healthy_node_passes(rack):
    name, base, store = rack
    res = CliRunner().invoke(
        burnin_main,
        [
            *base,
            "run",
            "--rack",
            name,
            "--nodes",
            ",".join(NODE_FAULT),
            "--stages",
            "preflight,gpu",
            "--json",
            *QUICK,
        ],
    )
    assert res.exit_code == 1, res.output  # two nodes fail
    outcomes = {o["node"]: o for o in json.loads(res.stdout)}
    for node, fault in NODE_FAULT.items():
        outcome = outcomes[node]
        results = {r["check"]: r for s in outcome["stages"] for r in s["results"]}
        assert {"nccl_local", "copy_bandwidth"} <= set(results), f"{node}: {sorted(results)}"
        not_passed = {c: r["verdict"] for c, r in results.items() if r["verdict"] != "PASS"}
        failing = FAILING.get(node, {})
        assert set(not_passed) == set(failing), (node, fault, {c: results[c]["findings"] for c in not_passed})
        for check, action in failing.items():
            criticals = [f for f in results[check]["findings"] if f["severity"] == "critical"]
            assert results[check]["verdict"] == "FAIL" and action in {f["action"] for f in criticals}
        if fault is None:
            assert outcome["verdict"] == "PASS" and outcome["state"] == "burnin"
            assert results["nccl_local"]["metrics"]["busbw_gbps"] > 460
            assert results["copy_bandwidth"]["metrics"]["h2d_gbps"]["GPU 5"] > 48
        else:
            assert [s["stage"] for s in outcome["stages"]][-1] == "gpu" and outcome["state"] == "failed"
    slow = {r["check"]: r for s in outcomes["node03"]["stages"] for r in s["results"]}["copy_bandwidth"]
    assert [f["subject"] for f in slow["findings"]] == ["GPU 5"]
    assert {r.check for r in store.latest_results("node02")} >= {"nccl_local", "copy_bandwidth"}

"""The host stage (memory_bandwidth, nvme_perf, cpu_throttle) and the node-side faults an
acceptance needs, on the virtual rack: real SSH, the stand-ins' recorded sysbench, fio, smartctl
and nvidia-smi outputs.

- node01, healthy: memory and NVMe pass; cpu_throttle is UNKNOWN, never a pass, because a lab
  node reads this machine's CPUs, which have no thermal throttle counters (a VM).
- node02 mem-bw-low, node03 nvme-slow: each fails its host check (RESEAT first), nothing else.
- node04 nvme-critical-warning: preflight's nvme_health fails naming /dev/nvme3 and its serial.
- node05 gpu-vbios-old: preflight's gpu_versions names GPU 3 by its serial (a warning; FAIL with
  the VBIOS pinned).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from burnin.cli import main as burnin_main
from tests.lab.conftest import faulted_rack

pytestmark = pytest.mark.lab

NODE_FAULT = {
    "node01": None,
    "node02": "mem-bw-low",
    "node03": "nvme-slow",
    "node04": "nvme-critical-warning",
    "node05": "gpu-vbios-old",
}
# check -> (verdict, actions of its critical findings) where it is not what the healthy node gets
EXPECTED = {
    "node02": {"memory_bandwidth": ("FAIL", {"RESEAT"})},
    "node03": {"nvme_perf": ("FAIL", {"RESEAT"})},
    "node04": {"nvme_health": ("FAIL", {"RMA"})},
    "node05": {"gpu_versions": ("WARN", set())},
}
HOST_CHECKS = {"memory_bandwidth", "nvme_perf", "cpu_throttle"}


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    with faulted_rack(tmp_path_factory.mktemp("hostperf"), "h", NODE_FAULT) as up:
        yield up


def _run(base, name, *args):
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
            "preflight,host",
            "--json",
            *args,
        ],
    )
    assert res.exit_code == 1, res.output  # faulty nodes fail
    return {o["node"]: o for o in json.loads(res.stdout)}


def _results(outcome):
    return {r["check"]: r for s in outcome["stages"] for r in s["results"]}


def test_each_fault_fails_its_check_and_the_healthy_node_is_never_passed_without_evidence(rack):
    name, base, store = rack
    outcomes = _run(base, name)
    healthy = _results(outcomes["node01"])
    assert {c: healthy[c]["verdict"] for c in HOST_CHECKS} == {
        "memory_bandwidth": "PASS",
        "nvme_perf": "PASS",
        "cpu_throttle": "UNKNOWN",  # no thermal counters on this machine's CPUs: no evidence, no pass
    }
    assert healthy["memory_bandwidth"]["metrics"]["memory_read_gbps"] > 250
    assert healthy["nvme_perf"]["metrics"]["randread_iops"] > 200000
    assert outcomes["node01"]["state"] == "burnin"  # UNKNOWN is not a failure: nothing to repair
    usual = {c: r["verdict"] for c, r in healthy.items()}
    for node, expected in EXPECTED.items():
        results = _results(outcomes[node])
        different = {c: r["verdict"] for c, r in results.items() if r["verdict"] != usual.get(c)}
        assert set(different) == set(expected), (node, {c: results[c]["findings"] for c in different})
        for check, (verdict, actions) in expected.items():
            critical = {f["action"] for f in results[check]["findings"] if f["severity"] == "critical"}
            assert results[check]["verdict"] == verdict and critical == actions, (node, results[check])
    assert (
        outcomes["node02"]["state"] == outcomes["node03"]["state"] == outcomes["node04"]["state"] == "failed"
    )
    assert not HOST_CHECKS & set(_results(outcomes["node04"]))  # stopped at preflight

    slow_memory = _results(outcomes["node02"])["memory_bandwidth"]
    assert slow_memory["metrics"]["memory_read_gbps"] == pytest.approx(160.3, abs=0.1)
    slow_disk = _results(outcomes["node03"])["nvme_perf"]
    assert {f["subject"] for f in slow_disk["findings"]} == {"NVMe under /raid"} and len(
        slow_disk["findings"]
    ) == 4

    (drive,) = _results(outcomes["node04"])["nvme_health"]["findings"]
    assert (
        drive["subject"] == "/dev/nvme3 (serial S64HNE0T512348)"
        and "reliability degraded" in drive["message"]
    )

    versions = _results(outcomes["node05"])["gpu_versions"]
    (odd,) = versions["findings"]
    assert odd["subject"] == "GPU 3" and "serial 1654522012479" in odd["message"]
    assert sorted(versions["metrics"]["vbios"]) == ["96.00.30.00.01", "96.00.74.00.01"]


def test_a_pinned_vbios_fails_the_old_gpu_by_its_serial(rack):
    name, base, store = rack
    assert store.get_node("node05").state == "burnin"  # a warning failed nothing
    res = CliRunner().invoke(
        burnin_main,
        [
            *base,
            "run",
            "--rack",
            name,
            "--nodes",
            "node05",
            "--stages",
            "preflight",
            "--json",
            "--set",
            "pins.vbios=96.00.74.00.01",
        ],
    )
    (outcome,) = json.loads(res.stdout)
    versions = _results(outcome)["gpu_versions"]
    assert versions["verdict"] == "FAIL", versions
    (old,) = [f for f in versions["findings"] if f["severity"] == "critical"]
    assert (
        old["subject"] == "GPU 3"
        and "serial 1654522012479" in old["message"]
        and old["action"] == "RECONFIGURE"
    )

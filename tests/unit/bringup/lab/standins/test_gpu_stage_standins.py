"""The gpu stage's single-node stand-ins (all_reduce_perf -g 8 in one process, nvbandwidth), run
as a lab node runs them, and judged by the checks that read them: a healthy node passes, each
fault is caught by its own check and no other."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.parsers.nccl_tests import parse_nccl_tests
from burnin.result import Verdict
from tests.profiles import shipped

PROFILE = shipped()
ALL_REDUCE = ("-b", "8", "-e", "8G", "-f", "2", "-g", "8")
NVBANDWIDTH = ("-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce")


@pytest.fixture
def node(lab_node):
    return functools.partial(lab_node, None)


def run_tool(
    root: Path, tool: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(root / "usr/local/bin" / tool), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


def verdict(check: str, stdout: str, rc: int = 0):
    return judge(ALL_CHECKS[check], CommandOutput(stdout=stdout, rc=rc), PROFILE)


def test_all_reduce_g8_prints_the_single_node_recording_with_the_node_itself(node):
    root = node()
    done = run_tool(root, "all_reduce_perf", *ALL_REDUCE, env={"NCCL_DEBUG": "VERSION"})
    assert done.returncode == 0, done.stderr
    run = parse_nccl_tests(done.stdout)
    assert run.complete and run.n_gpus == 8 and len(run.ranks) == 8 and len(run.hosts) == 1
    assert run.hosts[0] != "lccn09"  # this node's hostname, not the recorded host's
    assert [r.size for r in run.rows] == [8 << i for i in range(31)]  # 8 B .. 8 GiB
    assert run.nccl_version == "2.26.2+cuda12.8" and run.wrong == 0
    result = verdict("nccl_local", done.stdout)
    assert result.verdict is Verdict.PASS, result
    assert result.metrics["busbw_gbps"] > PROFILE.floors.nccl_busbw_single_node_gbps


def test_all_reduce_g8_honours_the_size_range_and_refuses_what_is_not_recorded(node):
    root = node()
    done = run_tool(root, "all_reduce_perf", "-b", "1M", "-e", "64M", "-f", "2", "-g", "8")
    assert done.returncode == 0 and "NCCL version" not in done.stdout  # no NCCL_DEBUG
    assert [r.size for r in parse_nccl_tests(done.stdout).rows] == [1 << 20 << i for i in range(7)]
    for args in (("-g", "4"), ("-g", "8", "-J", "/tmp/x.json")):
        refused = run_tool(root, "all_reduce_perf", *args)
        assert refused.returncode == 1 and refused.stdout == "" and "recorded for -g 8" in refused.stderr


def test_nvlink_slow_allreduce_is_caught_by_nccl_local_only(node):
    root = node("nvlink-slow-allreduce")
    done = run_tool(root, "all_reduce_perf", *ALL_REDUCE)
    assert done.returncode == 0, done.stderr
    result = verdict("nccl_local", done.stdout)
    assert result.verdict is Verdict.FAIL
    assert 250 < result.metrics["busbw_gbps"] < 280  # 0.55 x ~479
    assert "NVLink, NVSwitch or GPU" in result.findings[0].message
    copies = run_tool(root, "nvbandwidth", *NVBANDWIDTH)
    assert verdict("copy_bandwidth", copies.stdout).verdict is Verdict.PASS


def test_gpu_h2d_slow_is_caught_by_copy_bandwidth_naming_gpu_5(node):
    healthy = run_tool(node(), "nvbandwidth", *NVBANDWIDTH)
    assert verdict("copy_bandwidth", healthy.stdout).verdict is Verdict.PASS
    root = node("gpu-h2d-slow")
    slow = run_tool(root, "nvbandwidth", *NVBANDWIDTH)
    result = verdict("copy_bandwidth", slow.stdout)
    assert result.verdict is Verdict.FAIL
    assert [f.subject for f in result.findings] == ["GPU 5"]
    assert "host-to-device" in result.findings[0].message and "00000000:a8:00" in result.findings[0].message
    assert (
        verdict("nccl_local", run_tool(root, "all_reduce_perf", *ALL_REDUCE).stdout).verdict is Verdict.PASS
    )


@pytest.mark.parametrize("fault", ["nccl-slow", "nccl-hang", "nccl-corrupt"])
def test_multi_node_nccl_faults_leave_the_single_node_run_alone(node, fault):
    """Those faults model a node's rank in a multi-node group: only the nccl stage may catch them."""
    done = run_tool(node(fault), "all_reduce_perf", *ALL_REDUCE)
    assert done.returncode == 0, done.stderr
    assert verdict("nccl_local", done.stdout).verdict is Verdict.PASS

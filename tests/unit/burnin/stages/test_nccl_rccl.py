"""The nccl stage on an AMD profile: rccl-tests' all_reduce_perf through the same launcher, with
RCCL's environment, judged against the MI300X floors; against a fake `mpirun` that records its
command line and prints an rccl-tests run (its 'rccl-tests: Version' header) for the hostfile's hosts."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from bringup.ssh.fanout import SshTarget
from burnin.stages.group import applies
from burnin.stages.jobs import GroupContext, NodeJob
from burnin.stages.nccl import VENDOR_ENV, run_nccl_stage
from tests.paths import REPO

MI300X, _ = load_profile("mi300x-8x400g", REPO / "inventories" / "profiles")

FAKE_MPIRUN = r"""
import json, os, sys
args = sys.argv[1:]
open(os.environ["FAKE_ARGV"], "a").write(json.dumps(args) + "\n")
hosts = [l.split()[0] for l in open(args[args.index("--hostfile") + 1]) if l.strip()]
busbw = float(os.environ["FAKE_BUSBW"])
p = lambda s="": print(s, flush=True)
p("# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 "
  "agg iters: 1 validation: 1 graph: 0")
p("#")
p("rccl-tests: Version develop:448c4c7")
p("# Using devices")
for rank, h in enumerate(hosts):
    p("#  Rank %2d Group  0 Pid %6d on %10s device  0 [0000:0c:00] AMD Instinct MI300X" % (rank, 1000 + rank, h))
p("RCCL version : 2.22.3-develop:f5b15f2")
p("#")
p("#       size         count      type   redop    root     time   algbw   busbw #wrong"
  "     time   algbw   busbw #wrong")
for size in (1073741824, 2147483648):
    p("%12d  %12d  %8s  %6s  %6d  %7.0f  %6.2f  %6.2f  %5d  %7.0f  %6.2f  %6.2f  %5d"
      % (size, size // 4, "float", "sum", -1, 9000.0, busbw / 1.9, busbw, 0, 9000.0, busbw / 1.9, busbw, 0))
p("# Errors with asterisks indicate errors that have exceeded the maximum threshold.")
p("# Out of bounds values : 0 OK")
p("# Avg bus bandwidth    : %g " % busbw)
p("#")
"""


@pytest.fixture
def rack(tmp_path, monkeypatch):
    script = tmp_path / "mpirun"
    script.write_text(f"#!{sys.executable}\n{textwrap.dedent(FAKE_MPIRUN)}")
    script.chmod(0o755)
    argv = tmp_path / "argv"
    monkeypatch.setenv("FAKE_ARGV", str(argv))
    profile = apply_overrides(MI300X, ("diag.nccl_soak_minutes=0",))
    jobs = [
        NodeJob(f"mi{i}", profile, SshTarget(f"mi{i}", f"10.9.1.{i}", key_file="/k", host_key_policy="off"))
        for i in (1, 2)
    ]

    def run(busbw: float, **settings):
        monkeypatch.setenv("FAKE_BUSBW", str(busbw))
        results = run_nccl_stage(
            GroupContext(jobs, 7, {"mpirun_path": str(script), **settings}, lambda _: None)
        )
        commands = [json.loads(line) for line in argv.read_text().splitlines()]
        return {n: judged[0][0] for n, judged in results.items()}, commands

    return run


def test_the_nccl_stage_applies_to_amd_and_nvidia_profiles() -> None:
    assert applies("nccl", MI300X)


def test_an_amd_rack_runs_all_reduce_perf_with_rccls_environment(rack) -> None:
    results, commands = rack(361.0)
    assert {r.verdict.value for r in results.values()} == {"PASS"}
    (command,) = commands
    assert command[-5:] == ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"][-5:]
    assert "all_reduce_perf" in command
    for name, value in VENDOR_ENV["amd"].items():
        assert f"{name}={value}" in command


def test_the_inventorys_environment_wins_over_rccls_defaults(rack) -> None:
    _, commands = rack(361.0, burnin_launch_env={"NCCL_IB_PCI_RELAXED_ORDERING": "0"})
    (command,) = commands
    assert "NCCL_IB_PCI_RELAXED_ORDERING=0" in command and "NCCL_IB_PCI_RELAXED_ORDERING=1" not in command


def test_a_soak_under_the_mi300x_multi_node_floor_fails(rack) -> None:
    assert MI300X.floors.nccl_busbw_multi_node_gbps == 330
    results, _ = rack(200.0)
    # Both nodes of the only group were slow: the soak fails and no node alone is to blame.
    assert {r.verdict.value for r in results.values()} == {"UNKNOWN"}, [r.reason for r in results.values()]
    for r in results.values():
        assert r.metrics["group_soak"] == "FAIL" and r.metrics["floor_gbps"] == 330.0
        assert "below the floor 330 GB/s" in r.findings[0].message

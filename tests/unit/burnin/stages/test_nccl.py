"""The nccl stage runner end to end against a fake `mpirun` (a local script that reads the hostfile
and prints nccl-tests output as the hosts in it deserve): soak, watchdog, localisation, per-node
results and evidence; plus the runner's pure helpers."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

import burnin.stages.nccl as stage
from bringup.profiles.load import apply_overrides, load_profile
from bringup.ssh.fanout import SshTarget
from burnin.parsers.nccl_tests import parse_nccl_tests
from burnin.result import Verdict
from burnin.stages.jobs import GroupContext, NodeJob
from burnin.stages.nccl import host_matcher, plan_from, run_nccl_stage, silent_nodes, ssh_settings, trim
from tests.paths import REPO

PROFILE, _ = load_profile("h100-sxm-8x400g", REPO / "inventories" / "profiles")

# Prints an 8-GPU-per-node style run over the hostfile's hosts; the host named by FAKE_BAD makes
# the run hang after its first row, stall before it (NCCL set-up), run at a tenth of the
# bandwidth, or corrupt data (FAKE_MODE). FAKE_MODE=slowstart stalls the very first launch only.
FAKE_MPIRUN = r"""
import json, os, sys, time
args = sys.argv[1:]
hosts = [l.split()[0] for l in open(args[args.index("--hostfile") + 1]) if l.strip()]
names = json.loads(os.environ["FAKE_NAMES"])
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(" ".join(names[h] for h in hosts) + "\n")
mode = os.environ.get("FAKE_MODE", "")
bad = bool(set(os.environ.get("FAKE_BAD", "").split(",")) & {names[h] for h in hosts})
if mode == "slowstart":
    bad, mode = len(open(os.environ["FAKE_LOG"]).readlines()) == 1, "stallstart"
p = lambda s="": print(s, flush=True)
p("# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 "
  "agg iters: 1 validation: 1 graph: 0")
p("#")
p("# Using devices")
for rank, h in enumerate(hosts):
    p("#  Rank %2d Group  0 Pid %6d on %10s device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
      % (rank, 1000 + rank, names[h]))
p("#")
p("#       size         count      type   redop    root     time   algbw   busbw #wrong"
  "     time   algbw   busbw #wrong")
if bad and mode == "stallstart":
    time.sleep(600)
busbw = 40.0 if bad and mode == "slow" else 390.0
wrong = 7 if bad and mode == "corrupt" else 0
for i, size in enumerate((1073741824, 2147483648)):
    p("%12d  %12d  %8s  %6s  %6d  %7.0f  %6.2f  %6.2f  %5d  %7.0f  %6.2f  %6.2f  %5d"
      % (size, size // 4, "float", "sum", -1, 9000.0, busbw / 1.9, busbw, wrong, 9000.0, busbw / 1.9, busbw,
         wrong))
    if bad and mode == "hang":
        time.sleep(600)
p("# Out of bounds values : %d %s" % (wrong * 4, "FAILED" if wrong else "OK"))
p("# Avg bus bandwidth    : %g " % busbw)
p("#")
"""

BROKEN_MPIRUN = r"""
import os, sys
open(os.environ["FAKE_LOG"], "a").write("broken\n")
print("ORTE was unable to reliably start one or more daemons.", file=sys.stderr)
sys.exit(1)
"""

# srun's lines when rank 0 dies at start: the cause first, then the ranks it took down with it.
DYING_SRUN = r"""
import os, sys
open(os.environ["FAKE_LOG"], "a").write("dying\n")
for line in ["srun: error: node01: task 0: Exited with exit code 1", "srun: error: node03: task 2: Terminated",
             "srun: error: node02: task 1: Terminated", "srun: Force Terminated StepId=1.0"]:
    print(line, file=sys.stderr)
sys.exit(1)
"""

# The first FAKE_CRASHES launches die as a lab launch did under `srun --mpi=pmix` (Open MPI 4.1.4,
# docs/lab.md): rank 0 crashed inside MPI_Init before printing anything, srun took the others
# down. The launches after it run as FAKE_MPIRUN.
CRASHING_SRUN = (
    r"""
import os, sys
log = os.environ["FAKE_LOG"]
if (len(open(log).readlines()) if os.path.exists(log) else 0) < int(os.environ["FAKE_CRASHES"]):
    open(log, "a").write("crash\n")
    for line in ["[node01:04924] *** Process received signal ***",
                 "[node01:04924] Signal: Segmentation fault (11)",
                 "[node01:04924] *** End of error message ***",
                 "srun: error: node01: task 0: Segmentation fault",
                 "srun: launch/slurm: _step_signal: Terminating StepId=211.0",
                 "srun: error: node02: task 1: Terminated", "srun: error: node03: task 2: Terminated",
                 "srun: error: node04: task 3: Terminated", "srun: Force Terminated StepId=211.0"]:
        print(line, file=sys.stderr)
    sys.exit(143)
"""
    + FAKE_MPIRUN
)


def _launcher(path: Path, body: str) -> Path:
    """A launcher stand-in: ``body`` run by this Python."""
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def _profile(**diag):
    sets = [f"diag.{k}={v}" for k, v in {"nccl_soak_minutes": 0, **diag}.items()]
    return apply_overrides(PROFILE, tuple(sets))


def _jobs(count: int, profile=None) -> list[NodeJob]:
    profile = profile or _profile()
    return [
        NodeJob(
            f"node{i:02d}",
            profile,
            SshTarget(f"node{i:02d}", f"10.9.0.{10 + i}", key_file="/k", host_key_policy="off"),
        )
        for i in range(1, count + 1)
    ]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Runs the stage against the fake mpirun; returns (run(jobs, **settings), launches log)."""
    script = tmp_path / "mpirun"
    script.write_text(f"#!{sys.executable}\n{textwrap.dedent(FAKE_MPIRUN)}")
    script.chmod(0o755)
    log = tmp_path / "launches"
    monkeypatch.setenv("FAKE_LOG", str(log))
    progress: list[str] = []

    def run(jobs, bad=None, mode="", mpirun=script, partners=(), **settings):
        monkeypatch.setenv("FAKE_NAMES", json.dumps({j.target.host: j.name for j in jobs if j.target}))
        monkeypatch.setenv("FAKE_BAD", bad or "")
        monkeypatch.setenv("FAKE_MODE", mode)
        ctx = GroupContext(
            jobs, 7, {"mpirun_path": str(mpirun), **settings}, progress.append, partners=frozenset(partners)
        )
        return run_nccl_stage(ctx)

    def launches() -> list[list[str]]:
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    return run, launches, progress


def _verdicts(results) -> dict[str, str]:
    return {node: [r for r, _ in judged][0].verdict.value for node, judged in results.items()}


def test_healthy_rack_one_group_passes_with_busbw_per_iteration(fake):
    run, launches, progress = fake
    results = run(_jobs(4))
    assert _verdicts(results) == dict.fromkeys(["node01", "node02", "node03", "node04"], "PASS")
    result, evidence = results["node02"][0]
    assert result.check == "nccl_soak" and result.metrics["iterations_run"] == 1
    assert result.metrics["busbw_min_gbps"] == pytest.approx(390.0)
    assert result.metrics["hosts"] == ["node01", "node02", "node03", "node04"]
    assert launches() == [["node01", "node02", "node03", "node04"]]  # one launch, no localisation
    assert "# Avg bus bandwidth" in evidence and evidence.startswith("=== soak group 1 iteration 1")
    assert "launcher mpirun" in progress[0]


def test_soak_repeats_until_its_time_is_over(fake, monkeypatch):
    run, launches, _ = fake
    ticks = iter(range(0, 10_000, 10))  # every look at the clock is 10 s later
    monkeypatch.setattr(stage, "_now", lambda: next(ticks))
    results = run(_jobs(2, _profile(nccl_soak_minutes=0.5)))  # 30 s: deadline at t=30
    result, _ = results["node01"][0]
    assert result.verdict is Verdict.PASS and result.metrics["iterations_run"] == 3  # checked at 10, 20, 30
    assert len(launches()) == 3


def test_slow_node_is_the_culprit_the_others_pass(fake):
    run, launches, progress = fake
    results = run(_jobs(6), bad="node05", mode="slow")
    assert _verdicts(results) == {
        "node01": "PASS",
        "node02": "PASS",
        "node03": "PASS",
        "node04": "PASS",
        "node05": "FAIL",
        "node06": "PASS",
    }
    bad, evidence = results["node05"][0]
    messages = [f.message for f in bad.findings]
    assert any("node05 is a bad node" in m for m in messages)
    assert any("below the floor 360 GB/s" in m for m in messages)
    assert bad.metrics["localisation"]["confirmed"] is True
    assert evidence.split("\n", 1)[0].startswith("=== soak group 1 iteration 1 all_reduce_perf: FAIL")
    # localisation re-ran node05 in smaller groups; the passing nodes have a passing run as evidence
    assert any("node05" in hosts and len(hosts) < 6 for hosts in launches()[1:])
    good, good_evidence = results["node01"][0]
    assert good.metrics["group_soak"] == "FAIL" and good.metrics["localisation"]["passed_trials"] >= 1
    assert ": PASS on" in good_evidence
    assert any("culprit(s): node05" in line for line in progress)


def test_two_repaired_nodes_soak_apart_each_beside_golden_partners(fake):
    """A nightly re-tests node01 (still slow) and node02 (repaired for good) beside the
    golden node03 and node04. Each soaks in its own group padded with a partner, so node02 passes
    its own soak, never judged from a group node01 failed, and the failing group blames node01."""
    run, launches, progress = fake
    results = run(_jobs(4), bad="node01", mode="slow", partners={"node03", "node04"})
    assert _verdicts(results) == {"node01": "FAIL", "node02": "PASS", "node03": "PASS", "node04": "PASS"}
    assert sorted(launches()[:2]) == [["node01", "node03"], ["node02", "node04"]]  # the soak groups
    good, _ = results["node02"][0]
    assert "group_soak" not in good.metrics and good.metrics["hosts"] == ["node02", "node04"]
    assert not [hosts for hosts in launches() if {"node01", "node02"} <= set(hosts)]  # never together
    bad, _ = results["node01"][0]
    assert bad.metrics["localisation"]["confirmed"] is True
    assert any("node01 is a bad node" in f.message for f in bad.findings)
    assert "2 golden partner(s) as anchors" in progress[0]


def test_fewer_partners_than_nodes_under_test_share_groups_and_say_so(fake):
    """One partner for two nodes under test: they share its group (as without partners) and each
    result says why; the partner still anchors the localisation, so node01 is blamed."""
    run, launches, _ = fake
    results = run(_jobs(3), bad="node01", mode="slow", partners={"node03"})
    assert _verdicts(results) == {"node01": "FAIL", "node02": "PASS", "node03": "PASS"}
    assert launches()[0] == ["node01", "node02", "node03"]
    good, _ = results["node02"][0]
    notes = [f.message for f in good.findings if "golden partner" in f.message]
    assert notes and "node01" in notes[0] and "1 golden partner(s) for 2 node(s) under test" in notes[0]


def test_groups_soak_apart_and_corruption_is_rma(fake):
    run, launches, _ = fake
    results = run(_jobs(6, _profile(nccl_group_size=3)), bad="node05", mode="corrupt")
    assert launches()[:2] in (
        [["node01", "node02", "node03"], ["node04", "node05", "node06"]],
        [["node04", "node05", "node06"], ["node01", "node02", "node03"]],
    )
    verdicts = _verdicts(results)
    assert verdicts.pop("node05") == "FAIL" and set(verdicts.values()) == {"PASS"}
    clean, _ = results["node02"][0]
    assert "group_soak" not in clean.metrics and clean.metrics["failed_iterations"] == 0  # its group passed
    bad, _ = results["node05"][0]
    assert {f.action.value for f in bad.findings if f.severity.value == "critical"} == {"RMA"}


def test_hang_is_killed_by_the_watchdog_and_localised(fake):
    run, launches, _ = fake
    results = run(_jobs(4, _profile(nccl_iteration_timeout_s=1)), bad="node03", mode="hang")
    assert _verdicts(results) == {"node01": "PASS", "node02": "PASS", "node03": "FAIL", "node04": "PASS"}
    bad, evidence = results["node03"][0]
    hang = [f.message for f in bad.findings if "hang" in f.message]
    assert hang and "after the 1 GiB row" in hang[0]
    assert "watchdog: no new output line for 1 s" in evidence


def test_a_slow_start_is_tried_again_and_blames_nobody(fake):
    run, launches, progress = fake
    profile = _profile(nccl_iteration_timeout_s=1)
    results = run(_jobs(4, profile), mode="slowstart", burnin_startup_timeout_s=1)
    assert set(_verdicts(results).values()) == {"PASS"}
    assert len(launches()) == 2  # the stalled launch, then the same group again
    result, evidence = results["node01"][0]
    assert result.metrics["iterations_run"] == 1  # the stalled launch is evidence, not an iteration
    assert "while starting up" in evidence and "iteration 1 all_reduce_perf (again): PASS" in evidence
    assert not any("localisation" in line for line in progress)


def test_a_node_that_stalls_every_start_is_the_culprit(fake):
    run, launches, _ = fake
    profile = _profile(nccl_iteration_timeout_s=1)
    results = run(_jobs(4, profile), bad="node02", mode="stallstart", burnin_startup_timeout_s=1)
    assert _verdicts(results) == {"node01": "PASS", "node02": "FAIL", "node03": "PASS", "node04": "PASS"}
    bad, evidence = results["node02"][0]
    assert any("hang" in f.message for f in bad.findings)
    # every launch with node02 in it was tried twice; none without it was
    with_bad = [hosts for hosts in launches() if "node02" in hosts]
    assert all(with_bad.count(hosts) % 2 == 0 for hosts in with_bad)
    assert "(again)" in evidence


def test_a_launcher_that_starts_nothing_is_unknown_not_a_culprit(fake, tmp_path):
    run, launches, _ = fake
    results = run(_jobs(4), mpirun=_launcher(tmp_path / "broken-mpirun", BROKEN_MPIRUN))
    assert set(_verdicts(results).values()) == {"UNKNOWN"}
    result, evidence = results["node01"][0]
    assert "launcher could not start" in result.reason and "ORTE was unable" in result.reason
    assert launches() == [["broken"], ["broken"]]  # tried once more before giving up
    assert "ORTE was unable" in evidence


def test_a_launch_that_died_at_start_names_its_first_error_not_only_the_terminations(fake, tmp_path):
    run, _, _ = fake
    results = run(_jobs(4), mpirun=_launcher(tmp_path / "dying-mpirun", DYING_SRUN))
    result, _ = results["node01"][0]
    assert "launcher could not start" in result.reason
    assert "task 0: Exited with exit code 1" in result.reason, result.reason
    assert "Force Terminated" in result.reason, result.reason


def test_a_rank_that_crashed_at_start_twice_is_tried_a_third_time(fake, tmp_path, monkeypatch):
    run, launches, _ = fake
    monkeypatch.setenv("FAKE_CRASHES", "2")
    results = run(_jobs(4), mpirun=_launcher(tmp_path / "crashing-srun", CRASHING_SRUN))
    assert set(_verdicts(results).values()) == {"PASS"}, results["node01"][0][0].reason
    assert launches()[:3] == [["crash"], ["crash"], ["node01", "node02", "node03", "node04"]]


def test_a_rank_that_crashes_every_start_is_named_with_its_signal(fake, tmp_path, monkeypatch):
    run, launches, _ = fake
    monkeypatch.setenv("FAKE_CRASHES", "99")
    results = run(_jobs(4), mpirun=_launcher(tmp_path / "crashing-srun", CRASHING_SRUN))
    assert set(_verdicts(results).values()) == {"UNKNOWN"}
    result, evidence = results["node03"][0]
    assert "crashed" in result.reason and "node01: task 0: Segmentation fault" in result.reason, result.reason
    assert "End of error message" not in result.reason, result.reason
    assert launches() == [["crash"]] * 3
    assert "task 0: Segmentation fault" in evidence


def test_local_jobs_and_bad_settings_are_unknown(fake):
    run, launches, _ = fake
    local = [NodeJob("here", _profile(), None)]
    assert run(local)["here"][0][0].verdict is Verdict.UNKNOWN
    results = run(_jobs(2), burnin_launcher="pdsh")
    assert _verdicts(results) == {"node01": "UNKNOWN", "node02": "UNKNOWN"}
    assert "unknown launcher 'pdsh'" in results["node01"][0][0].reason
    assert launches() == []


# ---- pure helpers ------------------------------------------------------------------------------------


NODES = {"gpu-a01": "10.0.0.1", "gpu-a02": "10.0.0.2", "gpu-a03": "10.0.0.3"}
DEVICES = "".join(
    f"#  Rank {i:2d} Group  0 Pid   100{i} on {h:>10s} device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
    for i, h in enumerate(["gpu-a01.dc1", "10.0.0.2", "gpu-a03"])
)
HEADER = (
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n#\n# Using devices\n"
)


def test_host_matcher_names_short_names_and_addresses():
    match = host_matcher(NODES)
    assert match["gpu-a01"] == "gpu-a01" and match["10.0.0.2"] == "gpu-a02"


def test_silent_nodes():
    # all joined (device lines of every node, by FQDN, address or name): the stall is in the collective
    text = HEADER + DEVICES
    assert silent_nodes(text, parse_nccl_tests(text), NODES) == ()
    # NCCL_DEBUG=INFO: the ranks that completed init are the ones that joined
    info = text + "gpu-a01:11:11 [0] NCCL INFO comm 0x1 rank 0 nRanks 3 - Init COMPLETE\n"
    info += "gpu-a03:13:13 [0] NCCL INFO comm 0x3 rank 2 nRanks 3 - Init COMPLETE\n"
    assert silent_nodes(info, parse_nccl_tests(info), NODES) == ("gpu-a02",)
    # nothing printed at all: nobody can be named
    assert silent_nodes("", None, NODES) == ()


def test_trim_keeps_head_and_tail():
    text = "\n".join(f"line {i}" for i in range(500))
    cut = trim(text, lines=10)
    assert cut.splitlines()[:10] == [f"line {i}" for i in range(10)]
    assert cut.splitlines()[-1] == "line 499" and "[480 lines cut]" in cut
    assert trim("a\nb\n") == "a\nb"


def test_plan_from_profile_and_settings():
    plan = plan_from(
        _profile(nccl_soak_minutes=2, nccl_group_size=8),
        {"nccl_test_args": "-b 1M -e 1G", "nccl_tests_dir": "/opt/nccl-tests/build"},
    )
    assert plan.tests == ("all_reduce_perf",) and plan.group_size == 8 and plan.soak_s == 120
    assert plan.timeout_s == 600 and plan.argv("all_reduce_perf") == [
        "/opt/nccl-tests/build/all_reduce_perf",
        "-b",
        "1M",
        "-e",
        "1G",
    ]
    default = plan_from(_profile(), {})
    assert default.argv("all_gather_perf") == [
        "all_gather_perf",
        "-b",
        "8",
        "-e",
        "16G",
        "-f",
        "2",
        "-g",
        "1",
    ]


def test_ssh_settings_follow_the_targets_host_key_policy():
    strict = ssh_settings(
        [SshTarget("a", "10.0.0.1", user="ops", port=2200, key_file="/k", host_key_policy="strict")]
    )
    assert strict == {
        "ssh_key": "/k",
        "ssh_user": "ops",
        "ssh_port": 2200,
        "ssh_options": "-o StrictHostKeyChecking=yes -o LogLevel=ERROR",
    }
    assert (
        "UserKnownHostsFile=/dev/null"
        in ssh_settings([SshTarget("a", "h", host_key_policy="off")])["ssh_options"]
    )
    assert ssh_settings([]) == {}


def test_one_node_alone_is_not_a_multi_node_soak(fake):
    # A nightly with no golden partner free (or a run where one node reached the stage) sent one
    # node: a 1-node all_reduce measures no network (busbw 0 with one rank, NVLink with eight)
    # and was judged against the multi-node floor: FAIL, and the node kept drained for nothing.
    run, launches, _ = fake
    results = run(_jobs(1))
    assert _verdicts(results) == {"node01": "UNKNOWN"}
    ((result, _),) = results["node01"]
    assert "2 nodes" in result.reason and "alone" in result.reason
    assert launches() == []  # nothing launched


def _leaf_fabric(monkeypatch, leaf_of: dict[str, str | None]):
    """The ib stage's discovery replaced: each node one HCA port, cabled to the leaf
    ``leaf_of`` names (None: not in the fabric map); the first node maps the fabric."""
    from burnin.checks.ib_load import IbPortInfo
    from burnin.parsers.ibnetdiscover import IbnetPort
    from burnin.stages import ib as ib_stage
    from burnin.stages.ib_discovery import Discovery

    guid = {n: f"0x{i:04x}" for i, n in enumerate(sorted(leaf_of), 1)}
    leaf_guid = {
        name: f"0x7cfe90030000{i:04x}" for i, name in enumerate(sorted({v for v in leaf_of.values() if v}))
    }
    fabric = [
        IbnetPort("CA", 1, 1, guid[n], "4x", "NDR", f"{n} HCA-1", "SW", 2, k, leaf_guid[leaf], leaf)
        for k, (n, leaf) in enumerate(sorted(leaf_of.items()), 1)
        if leaf
    ]
    asked: list[list[str]] = []

    def fake_discover(targets, bound=None):
        asked.append(sorted(targets))
        return {
            n: Discovery(ports=[IbPortInfo(n, "mlx5_0", 1, guid[n])], fabric=fabric if i == 0 else None)
            for i, n in enumerate(sorted(targets))
        }

    monkeypatch.setattr(ib_stage, "discover", fake_discover)
    return asked


def test_soak_groups_by_leaf_and_a_slow_leaf_is_named_as_the_leaf(fake, monkeypatch):
    """diag.nccl_group_by_leaf: round 1 is one group per leaf switch; a leaf whose every node
    is slow (its uplinks) fails as one group, every node of it fails beside nodes of the other
    leaf, and each result names the leaf, not three unrelated bad nodes."""
    run, launches, progress = fake
    leaf_of = {f"node{i:02d}": ("ib-leaf01" if i <= 3 else "ib-leaf02") for i in range(1, 7)}
    asked = _leaf_fabric(monkeypatch, leaf_of)
    results = run(_jobs(6, _profile(nccl_group_by_leaf="true")), bad="node04,node05,node06", mode="slow")
    assert asked == [sorted(leaf_of)]
    assert sorted(launches()[:2]) == [["node01", "node02", "node03"], ["node04", "node05", "node06"]]
    assert _verdicts(results) == {**dict.fromkeys(["node01", "node02", "node03"], "PASS"),
                                  **dict.fromkeys(["node04", "node05", "node06"], "FAIL")}  # fmt: skip
    for node in ("node04", "node05", "node06"):
        first = results[node][0][0].findings[0]
        assert first.subject == "leaf ib-leaf02 (0x7cfe900300000001)", first
        assert "every node under leaf ib-leaf02" in first.message and first.action.value == "REPLACE_CABLE"
    assert any("by leaf" in line and "leaf ib-leaf01" in line for line in progress), progress


def test_nodes_of_no_known_leaf_soak_apart_and_say_so(fake, monkeypatch):
    run, launches, _ = fake
    leaf_of = {"node01": "ib-leaf01", "node02": "ib-leaf01", "node03": None, "node04": None}
    _leaf_fabric(monkeypatch, leaf_of)
    results = run(_jobs(4, _profile(nccl_group_by_leaf="true")))
    assert sorted(launches()) == [["node01", "node02"], ["node03", "node04"]]
    assert _verdicts(results) == dict.fromkeys(leaf_of, "PASS")
    notes = [f.message for f in results["node03"][0][0].findings]
    assert any("no known leaf" in m for m in notes), notes
    assert not any("leaf" in f.message for f in results["node01"][0][0].findings)


def test_leaf_grouping_off_by_default_asks_no_fabric(fake, monkeypatch):
    run, launches, _ = fake
    asked = _leaf_fabric(monkeypatch, {"node01": "l1", "node02": "l1", "node03": "l2", "node04": "l2"})
    run(_jobs(4))
    assert asked == [] and launches() == [["node01", "node02", "node03", "node04"]]

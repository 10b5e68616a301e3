"""The ib stage's I/O edge without a lab: discovery parsing, the round script run for real on this
machine against the lab's ib_write_bw/perfquery stand-ins (two node roots talking over loopback
TCP), and the stage's orchestration with the network replaced by a simulated fabric."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from bringup.ssh.fanout import RemoteResult, SshTarget
from burnin.checks.base import CommandOutput
from burnin.checks.ib_load import judge_session, measure_session
from burnin.plan.ib_pairs import PortKey, plan_rounds
from burnin.result import Verdict
from burnin.stages import group_stages
from burnin.stages import ib as ib_stage
from burnin.stages.batch import parse_output
from burnin.stages.jobs import GroupContext, NodeJob
from tests.paths import REPO
from tests.ports import random_base_port
from tests.unit.burnin.stages.ib_rounds import fake_run_round

STANDIN_SAMPLES = REPO / "bringup/lab/standins/samples"
PROFILE, _ = load_profile("h100-sxm-8x400g", REPO / "inventories/profiles")


def standin_sample(name: str) -> str:
    return (STANDIN_SAMPLES / name).read_text().split("\n", 1)[1]


def outputs(**kw: CommandOutput) -> dict[str, CommandOutput]:
    base = {"ibstat": CommandOutput(""), "sysfs": CommandOutput(""), "perftest": CommandOutput("1\n")}
    return {**base, **kw}


# ---- discovery ----------------------------------------------------------------------------------


def test_discovery_lists_ports_from_ibstat():
    found = ib_stage.parse_discovery(
        "node01",
        outputs(
            ibstat=CommandOutput(standin_sample("ibstat_8xh100_cx7_ndr_ib_mlx5_6_down_polling_DERIVED.txt"))
        ),
    )
    assert found.problem == "" and found.out_json and len(found.ports) == 8
    p0 = found.ports[0]
    assert (p0.hca, p0.port, p0.guid, p0.lid, p0.rate_gbps, p0.active) == (
        "mlx5_0", 1, "0xa088c20300e3142a", 101, 400.0, True,
    )  # fmt: skip
    assert [p.hca for p in found.ports if not p.active] == ["mlx5_6"]
    assert "== ibstat (exit status 0) ==" in found.evidence


def test_discovery_falls_back_to_sysfs_and_old_perftest_has_no_json():
    sysfs = load_sysfs_sample()
    found = ib_stage.parse_discovery(
        "n",
        outputs(
            ibstat=CommandOutput("", "bash: ibstat: command not found\n", rc=127),
            sysfs=CommandOutput(sysfs),
            perftest=CommandOutput("0\n"),
        ),
    )
    assert found.problem == "" and not found.out_json
    assert [(p.hca, p.state, p.physical_state, p.rate_gbps) for p in found.ports][0] == (
        "mlx5_0",
        "Active",
        "LinkUp",
        400.0,
    )
    nothing = ib_stage.parse_discovery("n", outputs(ibstat=CommandOutput("", "ibstat: not found\n", rc=127)))
    assert "could not list the InfiniBand ports" in nothing.problem
    missing = ib_stage.parse_discovery("n", outputs(perftest=CommandOutput("", "not installed", rc=127)))
    assert not missing.has_perftest


def load_sysfs_sample() -> str:
    from tests.unit.burnin.parsers._samples import load

    return load("sysfs_class_infiniband_h100_mlx5_0_1_counters.txt")


def test_fabric_map_names_switch_ports():
    from tests.unit.burnin.parsers._samples import load

    found = ib_stage.parse_discovery(
        "n",
        outputs(
            ibstat=CommandOutput(standin_sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")),
            fabric=CommandOutput(load("ibnetdiscover_p_edr.txt")),
        ),
    )
    assert found.fabric and len(found.fabric) == 9
    port = replace(found.ports[0], guid="0x7cfe9003003b4bde")
    (named,) = ib_stage.with_switch_ports([port], found.fabric)
    assert named.switch_port == "switch ib-i1l1s01 (0x7cfe9003009ce5b0) port 10"


# ---- a real round on this machine: the stand-ins over loopback --------------------------------


@pytest.fixture
def two_roots(tmp_path):
    from bringup.lab.standins import install_standins
    from bringup.lab.standins.sysfs import build_fake_sysfs

    roots = {}
    for node, faults in (("a", []), ("b", ["ib-port-degraded", "ib-symbol-errors"])):
        root = tmp_path / node
        install_standins(root, faults)
        build_fake_sysfs(root, faults)
        roots[node] = root
    return roots


def test_round_script_runs_the_standins_and_comes_back_judged(two_roots, tmp_path):
    from burnin.checks.ib_load import IbPortInfo

    ports = {n: ["mlx5_2/1", "mlx5_3/1"] for n in two_roots}
    # The stand-in servers listen on the host: ports no lab and no outgoing connection uses.
    (round_,) = plan_rounds(ports, 1, base_tcp_port=random_base_port())
    infos = {PortKey(n, r): IbPortInfo(n, r.split("/")[0], 1, lid=1) for n in ports for r in ports[n]}
    hosts = dict.fromkeys(two_roots, "127.0.0.1")
    plans = {
        n: ib_stage.round_script(n, list(round_.sessions), infos, hosts, 1, out_json=True) for n in two_roots
    }
    assert plans["a"].script.index("server ") < plans["a"].script.index("wait")
    procs = {
        n: subprocess.Popen(
            ["bash", "-s"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": f"{two_roots[n]}/usr/local/bin:/usr/bin:/bin"},
        )
        for n in two_roots
    }
    for n, proc in procs.items():
        proc.stdin.write(plans[n].script.encode())
        proc.stdin.close()
    collected = ib_stage.RoundOutputs()
    for n, proc in procs.items():
        raw = proc.stdout.read()
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        ib_stage.collect_round(n, plans[n], raw, "", round_, collected)
    results = {
        s.rail: judge_session(
            1, s, measure_session(collected.ends[(s.server, s)], collected.ends[(s.client, s)]), 388.0
        )
        for s in round_.sessions
    }
    assert results["mlx5_2/1"].passed and results["mlx5_2/1"].gbps == pytest.approx(392.34, abs=0.01)
    # b's mlx5_3 is degraded: the pair runs at 60% whichever end serves
    assert results["mlx5_3/1"].passed is False and results["mlx5_3/1"].gbps == pytest.approx(235.4, abs=0.01)
    for end in collected.ends.values():
        assert end.rc == 0 and '"BW_average"' in end.json and "RDMA_Write Bidirectional BW Test" in end.stdout
    rises = {(k.node, k.rail): {c.name: c.delta for c in v if c.delta} for k, v in collected.changes.items()}
    assert rises == {
        ("a", "mlx5_2/1"): {},
        ("a", "mlx5_3/1"): {},
        ("b", "mlx5_2/1"): {"SymbolErrorCounter": 12},
        ("b", "mlx5_3/1"): {},
    }
    text = "\n".join(collected.evidence["b"])
    assert (
        "$ ib_write_bw -d mlx5_3 -i 1" in text
        and "counters mlx5_2 port 1 before" in text
        and "[--out_json]" in text
    )


def test_round_reads_the_far_switch_port_and_blames_it_alone(tmp_path):
    """The far end of each loaded cable is read too (perfquery -x -C CA -P PORT LID PORT): the
    stand-in's switch port behind b's mlx5_0 counts symbol errors while mlx5_0 sends; b's own
    counters stay clean, so the switch port is named, not the cable."""
    from bringup.lab.standins import install_standins
    from bringup.lab.standins.sysfs import build_fake_sysfs
    from burnin.checks.ib_link_ends import far_end
    from burnin.checks.ib_load import IbPortInfo, NodeEvidence, judge_node
    from burnin.result import Action

    roots = {}
    for node, faults in (("a", []), ("b", ["ib-switch-port-symbol-errors"])):
        roots[node] = tmp_path / node
        install_standins(roots[node], faults)
        build_fake_sysfs(roots[node], faults)
    ports = {n: ["mlx5_0/1"] for n in roots}
    (round_,) = plan_rounds(ports, 1, base_tcp_port=random_base_port())
    infos = {
        PortKey(n, "mlx5_0/1"): IbPortInfo(
            n, "mlx5_0", 1, lid=101, state="Active", switch_lid=2052, switch_port_number=10 + i,
            switch_guid="0x506b4b03005c2740", switch_name="ib-i4l1s01",
        )
        for i, n in enumerate(sorted(roots))
    }  # fmt: skip
    plans = {
        n: ib_stage.round_script(n, list(round_.sessions), infos, dict.fromkeys(roots, "127.0.0.1"), 1, False)
        for n in roots
    }
    assert (
        "perfquery -x -C" in plans["b"].script and "switch_counters sb0 mlx5_0 1 2052 11" in plans["b"].script
    )
    procs = {
        n: subprocess.Popen(
            ["bash", "-s"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={"PATH": f"{roots[n]}/usr/local/bin:/usr/bin:/bin"},
        )
        for n in roots
    }  # fmt: skip
    for n, proc in procs.items():
        proc.stdin.write(plans[n].script.encode())
        proc.stdin.close()
    collected = ib_stage.RoundOutputs()
    for n, proc in procs.items():
        raw = proc.stdout.read()
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        ib_stage.collect_round(n, plans[n], raw, "", round_, collected)
    assert collected.switch_problems == {}
    rises = {k.node: {c.name: c.delta for c in v if c.delta} for k, v in collected.switch_changes.items()}
    assert rises == {"a": {}, "b": {"SymbolErrorCounter": 20}}
    own = {k.node: {c.name: c.delta for c in v if c.delta} for k, v in collected.changes.items()}
    assert own == {"a": {}, "b": {}}
    assert "switch LID 2052 port 11 before" in "\n".join(collected.evidence["b"])
    key = PortKey("b", "mlx5_0/1")
    ev = NodeEvidence("b", [infos[key]], 1)
    ev.counters[key] = [collected.changes[key]]
    ev.far.load_seconds = 1.0
    ev.far.counters[key] = [collected.switch_changes[key]]
    ev.far.ends[key] = far_end(infos[key])
    result = judge_node(ev, [], {}, infos)
    (finding,) = [f for f in result.findings if "SymbolErrorCounter" in f.message]
    assert finding.action is Action.RESEAT
    assert finding.message.startswith("switch ib-i4l1s01 (GUID 0x506b4b03005c2740, LID 2052) port 11")
    assert result.metrics["ports"]["mlx5_0"]["switch_counters"] == {"SymbolErrorCounter": 20}


def test_unreachable_node_leaves_its_ends_unmeasured():
    ports = {"a": ["r/1"], "b": ["r/1"]}
    (round_,) = plan_rounds(ports, 1)
    from burnin.checks.ib_load import IbPortInfo

    infos = {PortKey(n, "r/1"): IbPortInfo(n, "r", 1) for n in ports}
    plan = ib_stage.round_script("a", list(round_.sessions), infos, {}, 1, False)
    collected = ib_stage.RoundOutputs()
    ib_stage.collect_round("a", plan, b"", "unreachable: SSH timed out", round_, collected)
    (end,) = collected.ends.values()
    assert "unreachable" in end.error and collected.failed_nodes == {"a": "unreachable: SSH timed out"}


def test_cut_off_answer_is_not_a_measurement():
    from burnin.checks.ib_load import IbPortInfo

    ports = {"a": ["r/1"], "b": ["r/1"]}
    (round_,) = plan_rounds(ports, 1)
    infos = {PortKey(n, "r/1"): IbPortInfo(n, "r", 1) for n in ports}
    plan = ib_stage.round_script("a", list(round_.sessions), infos, {}, 1, False)
    frames = parse_output(b"", plan.token, plan.keys)
    assert all(f.error for f in frames.values())
    collected = ib_stage.RoundOutputs()
    ib_stage.collect_round("a", plan, b"noise\n", "time limit ran out", round_, collected)
    (end,) = collected.ends.values()
    assert end.error and measure_session(end, end).gbps_total is None
    assert PortKey("a", "r/1") in collected.counter_problems


# ---- the stage with a simulated fabric ----------------------------------------------------------


def test_stage_is_registered():
    assert group_stages()["ib"] is ib_stage.run_ib_stage


def test_stage_fails_the_bad_port_and_retests_a_one_off(monkeypatch):
    nodes = ["node01", "node02", "node03", "node04"]
    ibstat = standin_sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")
    bad = PortKey("node03", "mlx5_3/1")
    one_off = {frozenset((PortKey("node01", "mlx5_5/1"), PortKey("node04", "mlx5_5/1")))}
    rounds_run = []

    def fake_discover(targets, bound=None):
        return {n: ib_stage.parse_discovery(n, outputs(ibstat=CommandOutput(ibstat))) for n in targets}

    def bandwidth(round_, s) -> float:
        slow = bad in s.ends or (frozenset(s.ends) in one_off and not round_.retest)
        return 470.8 if slow else 784.7

    fake = fake_run_round(bandwidth)

    def run_round(round_, targets, infos, seconds, *rest, **kw):
        rounds_run.append((round_.index, round_.retest, seconds))
        return fake(round_, targets, infos, seconds, *rest, **kw)

    monkeypatch.setattr(ib_stage, "discover", fake_discover)
    monkeypatch.setattr(ib_stage, "run_round", run_round)
    profile = apply_overrides(PROFILE, ["diag.ib_load_seconds=3"])
    jobs = [NodeJob(n, profile, SshTarget(n, f"10.0.0.{i}")) for i, n in enumerate(nodes, 1)]
    progress: list[str] = []
    results = ib_stage.run_ib_stage(GroupContext(jobs, None, {}, progress.append))
    verdicts = {n: r[0][0].verdict for n, r in results.items()}
    assert verdicts == {
        "node01": Verdict.WARN,
        "node02": Verdict.PASS,
        "node03": Verdict.FAIL,
        "node04": Verdict.WARN,
    }
    assert rounds_run == [(1, False, 3), (2, False, 3), (3, True, 3)]
    node03 = results["node03"][0][0]
    assert [f.subject for f in node03.findings] == ["mlx5_3 port 1"]
    assert node03.metrics["ports"]["mlx5_3"]["verdict"] == "FAIL"
    assert {k for k, v in node03.metrics["ports"].items() if v["verdict"] != "PASS"} == {"mlx5_3"}
    assert (
        "flaky" not in json.dumps(results["node02"][0][0].metrics)
        and results["node01"][0][0].metrics["retest"]
    )
    assert "once" in results["node01"][0][0].findings[0].message
    assert progress[0].startswith("ib: discovering") and any("re-test" in line for line in progress)
    assert "== ibstat (exit status 0) ==" in results["node01"][0][1]


def simulated_fabric(
    monkeypatch, bad: set[PortKey], rate: dict[str, int] | None = None
) -> list[tuple[int, object]]:
    """Discovery and rounds replaced by a fabric where a session with a ``bad`` port runs at 60%
    of the floor, and a session runs at its slower end's line rate (``rate``: a node's Gb/s,
    400 when not given); returns the (round, session) list the stage ran, filled as it runs."""
    ibstat = standin_sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")
    sessions: list[tuple[int, object]] = []
    line_rate = (rate or {}).get

    def fake_discover(targets, bound=None):
        return {
            n: ib_stage.parse_discovery(
                n, outputs(ibstat=CommandOutput(ibstat.replace("Rate: 400", f"Rate: {line_rate(n, 400)}")))
            )
            for n in targets
        }

    def bandwidth(round_, s) -> float:
        sessions.append((round_.index, s))
        slower = min(line_rate(s.server, 400), line_rate(s.client, 400))
        return (470.8 if bad & set(s.ends) else 784.7) * slower / 400

    monkeypatch.setattr(ib_stage, "discover", fake_discover)
    monkeypatch.setattr(ib_stage, "run_round", fake_run_round(bandwidth))
    return sessions


def run_with_partners(nodes: list[str], partners: set[str], progress=None):
    profile = apply_overrides(PROFILE, ["diag.ib_load_seconds=3"])
    jobs = [NodeJob(n, profile, SshTarget(n, f"10.0.0.{i}")) for i, n in enumerate(nodes, 1)]
    say = progress.append if progress is not None else (lambda _: None)
    return ib_stage.run_ib_stage(GroupContext(jobs, None, {}, say, partners=frozenset(partners)))


def test_two_repaired_nodes_meet_golden_partners_never_each_other(monkeypatch):
    """A nightly re-tests node01 (a bad port left) and node04 (repaired for good) beside
    the golden node02 and node03. Each round pairs every port under test with a partner's, never
    with the other suspect's: node04 passes on its own evidence and node01's port is blamed by
    the two partners it failed with, without a re-test round."""
    partners = {"node02", "node03"}
    sessions = simulated_fabric(monkeypatch, {PortKey("node01", "mlx5_3/1")})
    progress: list[str] = []
    results = run_with_partners(["node01", "node02", "node03", "node04"], partners, progress)
    verdicts = {n: r[0][0].verdict for n, r in results.items()}
    assert verdicts == {
        "node01": Verdict.FAIL,
        "node02": Verdict.PASS,
        "node03": Verdict.PASS,
        "node04": Verdict.PASS,
    }
    assert not [s for _, s in sessions if {s.server, s.client} == {"node01", "node04"}]
    assert {i for i, _ in sessions} == {1, 2}  # no re-test round was needed
    for suspect in ("node01", "node04"):  # each of its ports met both partners
        met = {s.partner(suspect) for _, s in sessions if suspect in (s.server, s.client)}
        assert met == partners, (suspect, met)
    node01 = results["node01"][0][0]
    assert [f.subject for f in node01.findings if f.severity.value == "critical"] == ["mlx5_3 port 1"]
    assert "2 node(s) under test paired with 2 golden partner(s)" in progress[1]


def test_too_few_partners_leave_ports_under_test_meeting_and_say_so(monkeypatch):
    """One partner for three nodes under test: it takes one of them each round, the other two meet
    each other as without partners, and their results say why."""
    simulated_fabric(monkeypatch, set())
    results = run_with_partners(["node01", "node02", "node03", "node04"], {"node04"})
    assert {n: r[0][0].verdict for n, r in results.items()} == dict.fromkeys(results, Verdict.PASS)
    for node in ("node01", "node02", "node03"):
        notes = [f.message for f in results[node][0][0].findings if "golden partner" in f.message]
        assert notes and "1 golden partner(s) for 3 node(s) under test were too few" in notes[0], node
    assert not [f for f in results["node04"][0][0].findings if "golden partner" in f.message]


def test_stage_without_ssh_or_ib_ports():
    no_ib = apply_overrides(PROFILE, ["ib.hca_count=0"])
    results = ib_stage.run_ib_stage(
        GroupContext([NodeJob("x", PROFILE, None), NodeJob("y", no_ib, None)], None)
    )
    assert results["x"][0][0].verdict is Verdict.UNKNOWN and "SSH" in results["x"][0][0].reason
    assert results["y"][0][0].verdict is Verdict.PASS


def test_discover_fans_out_one_round_trip_per_node(monkeypatch):
    calls = []

    def fake_fan_out(targets, script, limit, concurrency):
        targets = list(targets)
        calls.append((sorted(t.name for t in targets), concurrency))
        for t in targets:
            text = script(t)
            assert ("ibnetdiscover" in text) == (t.name == "a")  # only the first node maps the fabric
            if t.name == "b":
                yield RemoteResult("b", error="unreachable: SSH to root@b:22 timed out")
                continue
            result = subprocess.run(
                ["bash", "-s"], input=text.encode(), capture_output=True, env={"PATH": os.environ["PATH"]}
            )
            yield RemoteResult(t.name, result.stdout, result.stderr, result.returncode)

    monkeypatch.setattr(ib_stage, "fan_out", fake_fan_out)
    found = ib_stage.discover({"a": SshTarget("a", "a"), "b": SshTarget("b", "b")})
    assert calls == [(["a", "b"], 2)]
    assert "could not reach the node" in found["b"].problem
    assert found["a"].problem.startswith("could not list")  # this machine has no InfiniBand


def test_ports_of_different_rates_are_never_paired(monkeypatch):
    """Two 400G nodes and two 200G nodes (HDR beside NDR on one fabric) in one run: a session
    between the two rates runs at the slower one, which a 400G port cannot pass, so each rate
    loads its own ports; every node passes, and no session joins a 400G and a 200G node."""
    rate = {"node01": 400, "node02": 400, "node03": 200, "node04": 200}
    ran = simulated_fabric(monkeypatch, set(), rate)
    ndr = apply_overrides(PROFILE, ["diag.ib_load_seconds=3"])
    hdr = apply_overrides(ndr, ["ib.rate_gbps=200", "floors.ib_write_bw_bidir_gbps=360"])
    jobs = [
        NodeJob(n, ndr if rate[n] == 400 else hdr, SshTarget(n, f"10.0.0.{i}"))
        for i, n in enumerate(sorted(rate), 1)
    ]
    results = ib_stage.run_ib_stage(GroupContext(jobs, None, {}, lambda _: None))
    assert {n: r[0][0].verdict for n, r in results.items()} == dict.fromkeys(rate, Verdict.PASS), {
        n: [f.message for f in r[0][0].findings][:2] for n, r in results.items()
    }
    assert ran and all(rate[s.server] == rate[s.client] for _, s in ran)


def test_gpudirect_mode_loads_each_hca_from_its_gpu_against_its_own_floor(monkeypatch):
    """diag.ib_gdr: every ib_write_bw runs with --use_cuda=<the HCA's GPU> (then
    --use_cuda_dmabuf, which perftest refuses before --use_cuda: https://github.com/linux-rdma/perftest/issues/336),
    judged against floors.ib_gdr_write_fraction (0.95 x 400 = 380), not the host-memory floor
    (388): 385 Gb/s per direction passes. Without GPU-to-NIC pairs in the profile the HCAs are
    paired by index, and the result says so."""
    ibstat = standin_sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt")
    commands: list[str] = []

    def fake_discover(targets, bound=None):
        return {n: ib_stage.parse_discovery(n, outputs(ibstat=CommandOutput(ibstat))) for n in targets}

    fake = fake_run_round(lambda round_, s: 770.0)

    def run_round(round_, targets, infos, seconds, *rest, **kw):
        for s in round_.sessions:
            for node in (s.server, s.client):
                plan = ib_stage.round_script(node, [s], infos, {}, seconds, False)
                commands.extend(plan.commands.values())
        return fake(round_, targets, infos, seconds, *rest, **kw)

    monkeypatch.setattr(ib_stage, "discover", fake_discover)
    monkeypatch.setattr(ib_stage, "run_round", run_round)
    profile = apply_overrides(
        PROFILE,
        [
            "diag.ib_load_seconds=3",
            "diag.ib_gdr=true",
            "diag.ib_gdr_dmabuf=true",
            "floors.ib_write_bw_bidir_gbps=760",
        ],
    )
    jobs = [NodeJob(n, profile, SshTarget(n, f"10.0.0.{i}")) for i, n in enumerate(["n1", "n2", "n3"], 1)]
    results = ib_stage.run_ib_stage(GroupContext(jobs, None, {}, lambda _: None))
    assert {n: r[0][0].verdict for n, r in results.items()} == dict.fromkeys(["n1", "n2", "n3"], Verdict.PASS)
    assert commands and all(" --use_cuda=" in c for c in commands)
    mlx5_3 = [c for c in commands if c.startswith("ib_write_bw -d mlx5_3 ")]
    assert mlx5_3 and all("--use_cuda=3 --use_cuda_dmabuf" in c for c in mlx5_3)
    result = results["n1"][0][0]
    assert result.metrics["floor_gbps"] == 380.0
    assert result.metrics["gdr"] == {"mlx5_0": 0, "mlx5_1": 1, "mlx5_2": 2, "mlx5_3": 3, "mlx5_4": 4,
                                     "mlx5_5": 5, "mlx5_6": 6, "mlx5_7": 7}  # fmt: skip
    notes = [f.message for f in result.findings]
    assert any("GPU memory" in m and "by index" in m for m in notes), notes


def test_host_memory_mode_is_unchanged_by_default():
    from burnin.checks.ib_load import IbPortInfo

    (round_,) = plan_rounds({"a": ["mlx5_0/1"], "b": ["mlx5_0/1"]}, 1)
    infos = {PortKey(n, "mlx5_0/1"): IbPortInfo(n, "mlx5_0", 1) for n in "ab"}
    plan = ib_stage.round_script("a", list(round_.sessions), infos, {}, 1, False)
    assert all("cuda" not in c for c in plan.commands.values())


def test_gpudirect_round_runs_the_standins_with_cuda_options(two_roots):
    """The lab's ib_write_bw takes --use_cuda/--use_cuda_dmabuf and prints perftest's CUDA lines,
    which the parser reads back: the GPU each end loaded from, and DMA-BUF."""
    from burnin.checks.ib_load import IbPortInfo
    from burnin.parsers.perftest import parse_perftest

    ports = {n: ["mlx5_2/1"] for n in two_roots}
    (round_,) = plan_rounds(ports, 1, base_tcp_port=random_base_port())
    infos = {PortKey(n, "mlx5_2/1"): IbPortInfo(n, "mlx5_2", 1, lid=1, gpu=2, gpu_dmabuf=True) for n in ports}
    hosts = dict.fromkeys(two_roots, "127.0.0.1")
    plans = {
        n: ib_stage.round_script(n, list(round_.sessions), infos, hosts, 1, out_json=False) for n in two_roots
    }
    procs = {
        n: subprocess.Popen(
            ["bash", "-s"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": f"{two_roots[n]}/usr/local/bin:/usr/bin:/bin"},
        )
        for n in two_roots
    }
    for n, proc in procs.items():
        proc.stdin.write(plans[n].script.encode())
        proc.stdin.close()
    collected = ib_stage.RoundOutputs()
    for n, proc in procs.items():
        raw = proc.stdout.read()
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        ib_stage.collect_round(n, plans[n], raw, "", round_, collected)
    for end in collected.ends.values():
        assert end.rc == 0, end.stderr
        parsed = parse_perftest(end.stdout)
        assert (parsed.cuda_device, parsed.cuda_dmabuf) == (2, True)
        assert parsed.report().average_gbps() > 0


def test_the_racks_cabling_plan_names_far_ends_and_a_bad_one_is_said(tmp_path):
    from burnin.checks.ib_link_ends import far_end
    from burnin.checks.ib_load import IbPortInfo

    plan_file = tmp_path / "plan.yml"
    plan_file.write_text(
        'switches:\n  su1-leaf0: {guid: "0x506b4b03005c2740", rack: R01, unit: U40}\n'
        "fat_tree: {scalable_units: 1, nodes_per_unit: 2, rails: 1, spines: 1}\n"
    )
    said: list[str] = []
    plan = ib_stage._fabric_plan(GroupContext([], None, {ib_stage.FABRIC_PLAN: str(plan_file)}, said.append))
    port = IbPortInfo(
        "gpu0000", "mlx5_0", 1, switch_lid=2052, switch_port_number=1, switch_guid="0x506B4B03005C2740"
    )
    assert far_end(port, plan).describe() == "switch su1-leaf0 (rack R01 U40) port 1"
    missing = GroupContext([], None, {ib_stage.FABRIC_PLAN: str(tmp_path / "none.yml")}, said.append)
    assert ib_stage._fabric_plan(missing) is None
    assert said and "the cabling plan is not used" in said[0] and "none.yml" in said[0]

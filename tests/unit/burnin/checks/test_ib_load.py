"""Judging the IB load (burnin.checks.ib_load): sessions against the floor, counters, blame by
agreement across rounds (simulated fabrics), and the node's result."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.checks.ib_load import (
    EndOutput,
    IbPortInfo,
    Measurement,
    NodeEvidence,
    counter_changes,
    floor_gbps,
    judge_node,
    judge_session,
    measure_session,
    retest_inputs,
    standings,
)
from burnin.parsers.perfquery import ERROR_COUNTERS
from burnin.plan.ib_pairs import PortKey, Session, plan_retest, plan_rounds
from burnin.result import Verdict
from tests.unit.burnin.parsers._samples import load

FLOOR = floor_gbps(0.97, 400)  # 388 Gb/s per direction
WRITE = load("perftest_ndr_cx7_client_send_read_write_bw.txt").split("vyl@csegpu1:~$ ib_write_bw", 1)[1]
WRITE = WRITE.split("\n", 1)[1]  # the ib_write_bw report: 392.34 Gb/s one way


def bidir(server="a", client="b", rail="mlx5_0/1") -> Session:
    return Session(rail, server, client, True, 18515)


# ---- measuring a session ------------------------------------------------------------------------


def test_measure_reads_the_client_report_and_prefers_json():
    text = measure_session(EndOutput(rc=0), EndOutput(WRITE, rc=0))
    assert text == Measurement(392.34)
    doc = {
        "test_info": {"test": "RDMA_Write_BW_Test"},
        "results": {"MsgSize": 65536, "n_iterations": 9, "BW_average": 390.0},
    }
    assert measure_session(EndOutput(), EndOutput(WRITE, json=json.dumps(doc), rc=0)).gbps_total == 390.0
    # the client had nothing: the server's report counts
    assert measure_session(EndOutput(WRITE, rc=0), EndOutput("", rc=1)).gbps_total == 392.34


def test_measure_tells_link_errors_from_runs_that_did_not_happen():
    down = EndOutput("", " Port number 1 state is Down\n", rc=1)
    assert measure_session(EndOutput(rc=124), down).link_problem == "Port number 1 state is Down"
    refused = measure_session(
        EndOutput("", "", rc=124), EndOutput("", "Couldn't connect to 10.0.0.2:18515\n", rc=1)
    )
    assert refused.gbps_total is None and "Couldn't connect to 10.0.0.2:18515" in refused.run_problem
    assert "timed out" in refused.run_problem
    gone = measure_session(EndOutput(error="node02: unreachable"), EndOutput(error="node01: unreachable"))
    assert "unreachable" in gone.run_problem
    # a report printed by a process that then failed is not trusted
    assert measure_session(EndOutput(), EndOutput(WRITE, rc=1)).gbps_total is None


def test_sessions_against_the_floor():
    ok = judge_session(1, bidir(), Measurement(784.68), FLOOR, 720)
    assert ok.passed and ok.gbps == 392.34 and ok.gbps_total == 784.68
    slow = judge_session(1, bidir(), Measurement(470.8), FLOOR, 720)
    assert slow.passed is False and slow.gbps == 235.4
    # the bidirectional floor applies on top of the per-direction one (the stricter wins)
    assert judge_session(1, bidir(), Measurement(780.0), FLOOR, 781).passed is False
    one_way = judge_session(1, Session("r", "a", "b", False, 1), Measurement(392.34), FLOOR)
    assert one_way.passed and one_way.gbps == 392.34
    assert judge_session(1, bidir(), Measurement(None, run_problem="x"), FLOOR).passed is None
    assert judge_session(1, bidir(), Measurement(None, link_problem="y"), FLOOR).passed is False


# ---- blame by agreement, simulated ----------------------------------------------------------


def simulate(
    ports: dict[str, list[str]], bad: set[PortKey], rounds: int = 2, flaky: set[frozenset] = frozenset()
):
    """Plan, 'run' (a session fails when an end is bad, or once for a flaky pair), judge, re-test."""
    planned = plan_rounds(ports, rounds)
    results = []
    seen_flaky: set[frozenset] = set()

    def run(round_):
        for s in round_.sessions:
            pair = frozenset(s.ends)
            fails = bool(set(s.ends) & bad) or (pair in flaky and pair not in seen_flaky)
            if pair in flaky:
                seen_flaky.add(pair)
            total = (470.8 if fails else 784.7) if s.bidirectional else (235.4 if fails else 392.3)
            results.append(judge_session(round_.index, s, Measurement(total), FLOOR, None, round_.retest))

    for r in planned:
        run(r)
    loaded = set().union(*(r.loaded for r in planned))
    standing = standings(results, loaded)
    inputs = retest_inputs(results, standing)
    retested = False
    if inputs.suspects:
        retest, _ = plan_retest(inputs.suspects, inputs.partners, inputs.must_avoid, inputs.met, rounds + 1)
        if retest.sessions:
            retested = True
            run(retest)
            standing = standings(results, loaded)
    return standing, results, retested


def rail_ports(n: int) -> dict[str, list[str]]:
    return {f"n{i:02d}": ["mlx5_0/1", "mlx5_1/1"] for i in range(n)}


@settings(max_examples=80, deadline=None)
@given(n=st.integers(min_value=3, max_value=16), seed=st.integers(min_value=0, max_value=10**6))
def test_one_bad_port_is_found_and_nobody_else_is_blamed(n, seed):
    ports = rail_ports(n)
    culprit = PortKey(f"n{random.Random(seed).randrange(n):02d}", "mlx5_1/1")
    standing, _, retested = simulate(ports, {culprit})
    assert standing[culprit].status == "bad"
    assert {p for p, s in standing.items() if s.status != "pass"} == {culprit}
    assert not retested  # two rounds already agree


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=16),
    k=st.integers(min_value=1, max_value=4),
    seed=st.integers(0, 10**6),
)
def test_a_bad_port_is_never_passed_and_a_good_one_never_blamed(n, k, seed):
    ports = rail_ports(n)
    rng = random.Random(seed)
    bad = {PortKey(f"n{i:02d}", "mlx5_0/1") for i in rng.sample(range(n), min(k, n))}
    standing, _, _ = simulate(ports, bad)
    for port, s in standing.items():
        if port in bad:
            assert s.status in ("bad", "inconclusive", "untested"), (port, s)
        else:
            assert s.status != "bad", (port, s)
    if n >= 6 and len(bad) == 2:
        assert {p for p, s in standing.items() if s.status == "bad"} == bad  # the re-test separates them


def test_two_nodes_cannot_tell_which_end_is_bad():
    standing, _, retested = simulate(rail_ports(2), {PortKey("n00", "mlx5_0/1")})
    assert not retested  # no proven partner on that rail to re-test against
    assert standing[PortKey("n00", "mlx5_0/1")].status == "inconclusive"
    assert standing[PortKey("n01", "mlx5_0/1")].status == "inconclusive"  # never PASS
    assert standing[PortKey("n00", "mlx5_1/1")].status == "pass"


def test_a_pair_failing_once_is_retested_and_ends_flaky():
    ports = rail_ports(4)
    pair = frozenset((PortKey("n00", "mlx5_0/1"), PortKey("n03", "mlx5_0/1")))
    standing, results, retested = simulate(ports, set(), flaky={pair})
    assert retested and any(r.retest for r in results)
    assert {p: s.status for p, s in standing.items() if s.status != "pass"} == dict.fromkeys(pair, "flaky")
    retest_partners = {
        r.session.partner(p.node) for r in results if r.retest for p in pair if p in r.session.ends
    }
    assert retest_partners and not retest_partners & {p.node for p in pair}


def test_counter_faults_explain_partner_failures():
    results = [judge_session(1, bidir("a", "b"), Measurement(400.0), FLOOR)]  # fails (200 per direction)
    keys = [PortKey("a", "mlx5_0/1"), PortKey("b", "mlx5_0/1")]
    alone = standings(results, keys)
    assert {s.status for s in alone.values()} == {"inconclusive"}
    known = standings(results, keys, known_bad={keys[0]})
    assert known[keys[0]].status == "bad" and known[keys[1]].status == "untested"


# ---- counters -----------------------------------------------------------------------------------


def counters(**changes: int) -> dict[str, int]:
    return {**dict.fromkeys(ERROR_COUNTERS, 0), **changes}


# ---- the node's result --------------------------------------------------------------------------


def port(node: str, i: int, **kw) -> IbPortInfo:
    base = {"guid": f"0xa088c20300e0{i:04x}", "lid": 101 + i, "rate_gbps": 400.0, "link_layer": "InfiniBand"}
    base.update({"state": "Active", "physical_state": "LinkUp"})
    base.update(kw)
    return IbPortInfo(node, f"mlx5_{i}", 1, **base)


def four_node_run(bad: PortKey | None = None):
    nodes = ["node01", "node02", "node03", "node04"]
    infos = {p.key: p for n in nodes for p in [port(n, i) for i in range(2)]}
    ports = {n: [f"mlx5_{i}/1" for i in range(2)] for n in nodes}
    results = []
    for r in plan_rounds(ports, 2):
        for s in r.sessions:
            total = 470.8 if bad in s.ends else 784.7
            results.append(judge_session(r.index, s, Measurement(total), FLOOR, 720))
    return nodes, infos, results, standings(results, set(infos))


def evidence(node, infos, **kw) -> NodeEvidence:
    ports = [p for p in infos.values() if p.node == node]
    return NodeEvidence(node, ports, len(ports), "InfiniBand", FLOOR, 720, **kw)


def test_the_bad_port_fails_its_node_and_names_both_ends():
    culprit = PortKey("node03", "mlx5_1/1")
    nodes, infos, results, standing = four_node_run(culprit)
    verdicts = {n: judge_node(evidence(n, infos), results, standing, infos) for n in nodes}
    assert {n: r.verdict for n, r in verdicts.items()} == {
        "node01": Verdict.PASS, "node02": Verdict.PASS, "node03": Verdict.FAIL, "node04": Verdict.PASS,
    }  # fmt: skip
    result = verdicts["node03"]
    (finding,) = [f for f in result.findings if f.severity.value == "critical"]
    assert finding.action.value == "REPLACE_CABLE" and finding.subject == "mlx5_1 port 1"
    assert "node03 mlx5_1 port 1 (GUID 0xa088c20300e00001, LID 102)" in finding.message
    partners = {r.session.partner("node03") for r in results if culprit in r.session.ends}
    for partner in partners:  # the other end of each failing pair, with its GUID
        assert f"{partner} mlx5_1 port 1 (GUID 0xa088c20300e00001" in finding.message
    assert "235.4 Gb/s per direction" in finding.message and "floor 388" in finding.message
    metrics = result.metrics
    json.dumps(metrics)  # JSON-able, for the report's chart
    assert metrics["ports"]["mlx5_1"]["verdict"] == "FAIL" and metrics["ports"]["mlx5_0"]["verdict"] == "PASS"
    assert metrics["ports"]["mlx5_1"]["gbps"] == 235.4 and metrics["ports"]["mlx5_0"]["gbps"] == 392.35
    assert len(metrics["ports"]["mlx5_1"]["rounds"]) == 2 and metrics["floor_gbps"] == 388.0


def test_switch_port_is_named_when_known():
    culprit = PortKey("node02", "mlx5_0/1")
    nodes, infos, results, standing = four_node_run(culprit)
    infos[culprit] = replace(infos[culprit], switch_port="switch leaf01 (0x1) port 7")
    result = judge_node(evidence("node02", infos), results, standing, infos)
    assert "cabled to switch leaf01 (0x1) port 7" in result.findings[0].message


def test_counter_rise_fails_the_port_even_at_full_bandwidth():
    nodes, infos, results, standing = four_node_run()
    key = PortKey("node02", "mlx5_0/1")
    ev = evidence(
        "node02", infos, counters={key: [counter_changes(counters(), counters(SymbolErrorCounter=24))]}
    )
    result = judge_node(ev, results, standing, infos)
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert "SymbolErrorCounter rose by 24" in finding.message and finding.action.value == "REPLACE_CABLE"
    assert result.metrics["ports"]["mlx5_0"]["counters"]["SymbolErrorCounter"] == 24


def test_saturated_counter_warns_and_discards_warn():
    nodes, infos, results, standing = four_node_run()
    key = PortKey("node01", "mlx5_1/1")
    rounds = [
        counter_changes(counters(LinkDownedCounter=255), counters(LinkDownedCounter=255)),
        counter_changes(counters(), counters(PortXmitDiscards=3)),
    ]
    result = judge_node(evidence("node01", infos, counters={key: rounds}), results, standing, infos)
    assert result.verdict is Verdict.WARN
    assert {f.message.split(": ", 1)[1].split(" ")[0] for f in result.findings} == {
        "LinkDownedCounter", "PortXmitDiscards",
    }  # fmt: skip
    assert result.metrics["ports"]["mlx5_1"]["saturated_counters"] == ["LinkDownedCounter"]


def test_down_missing_and_unpaired_ports():
    nodes, infos, results, standing = four_node_run()
    ports = [p for p in infos.values() if p.node == "node01"]
    down = port("node01", 6, state="Down", physical_state="Polling")
    eth = port("node01", 8, link_layer="Ethernet")
    ev = NodeEvidence("node01", [*ports, down, eth], 8, "InfiniBand", FLOOR, 720)
    result = judge_node(ev, results, standing, infos)
    assert result.verdict is Verdict.FAIL
    messages = [f.message for f in result.findings]
    assert any("3 InfiniBand port(s) found, the profile has 8" in m for m in messages)
    assert any("mlx5_6 port 1" in m and "Down/Polling" in m for m in messages)
    assert any("non-InfiniBand" in m for m in messages)
    alone = PortKey("node01", "mlx5_0/1")
    ev = NodeEvidence("node01", ports, 2, "InfiniBand", FLOOR, 720, unpaired={alone})
    unknown = judge_node(ev, [r for r in results if alone not in r.session.ends], standings([], set()), infos)
    assert unknown.verdict is Verdict.UNKNOWN and "rail mlx5_0/1" in unknown.reason


def test_discovery_problem_is_unknown():
    result = judge_node(NodeEvidence("n", problem="could not reach the node"), [], {}, {})
    assert result.verdict is Verdict.UNKNOWN and "could not reach" in result.reason

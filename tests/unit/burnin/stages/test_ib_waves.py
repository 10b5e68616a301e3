"""The ib stage's rounds keep the controller's bound: a round over more nodes than the
bound runs in waves, each node once per wave with all its servers and clients in one script.
Before, a round opened one SSH session per node all at once: 1,000 threads at 1,000 nodes."""

from __future__ import annotations

from bringup.ssh.fanout import RemoteResult, SshTarget
from burnin.checks.ib_load import IbPortInfo
from burnin.plan.ib_pairs import PortKey, plan_rounds
from burnin.stages import ib as ib_stage

RAILS = ["mlx5_0/1", "mlx5_1/1"]


def test_a_round_over_the_bound_runs_in_waves_of_whole_nodes(monkeypatch):
    ports = {f"n{i}": list(RAILS) for i in range(6)}
    (round_,) = plan_rounds(ports, 1)
    infos = {PortKey(n, r): IbPortInfo(n, r.split("/")[0], 1) for n in ports for r in RAILS}
    targets = {n: SshTarget(n, f"10.0.0.{i}") for i, n in enumerate(ports)}
    calls = []

    def fake_fan_out(targets_, script, limit, concurrency):
        targets_ = list(targets_)
        calls.append(({t.name: script(t) for t in targets_}, concurrency))
        for t in targets_:  # the nodes are not there: each is one failed row
            yield RemoteResult(t.name, error="unreachable: SSH timed out")

    monkeypatch.setattr(ib_stage, "fan_out", fake_fan_out)
    waves_told = []
    outputs = ib_stage.run_round(
        round_, targets, infos, 1, {}, bound=2, on_wave=lambda i, n, c: waves_told.append((i, n, c))
    )
    assert [len(scripts) for scripts, _ in calls] == [2, 2, 2]  # three waves of one pair each
    assert all(concurrency <= 2 for _, concurrency in calls)
    assert waves_told == [(1, 3, 2), (2, 3, 2), (3, 3, 2)]
    seen = [n for scripts, _ in calls for n in scripts]
    assert sorted(seen) == sorted(ports)  # each node in one wave only
    for scripts, _ in calls:
        for script in scripts.values():
            # both rails of the node, as server or client, in its one script
            assert script.count("ib_write_bw") == len(RAILS)
            assert all(f"-d {r.split('/')[0]}" in script for r in RAILS)
    assert set(outputs.failed_nodes) == set(ports)
    assert {node for node, _ in outputs.ends} == set(ports)


def test_a_round_within_the_bound_is_one_fan_out_of_every_node(monkeypatch):
    ports = {f"n{i}": list(RAILS) for i in range(6)}
    (round_,) = plan_rounds(ports, 1)
    infos = {PortKey(n, r): IbPortInfo(n, r.split("/")[0], 1) for n in ports for r in RAILS}
    targets = {n: SshTarget(n, f"10.0.0.{i}") for i, n in enumerate(ports)}
    calls = []

    def fake_fan_out(targets_, script, limit, concurrency):
        calls.append(sorted(t.name for t in targets_))
        return iter(())

    monkeypatch.setattr(ib_stage, "fan_out", fake_fan_out)
    ib_stage.run_round(round_, targets, infos, 1, {}, bound=200)
    assert calls == [sorted(ports)]

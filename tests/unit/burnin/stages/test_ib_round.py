"""The bash script a node runs for one round of the ib stage (burnin/stages/ib_round.py)."""

from __future__ import annotations

from burnin.checks.ib_load import IbPortInfo
from burnin.plan.ib_pairs import PortKey, plan_rounds
from burnin.stages.ib_round import round_script


def _infos(**kw) -> dict[PortKey, IbPortInfo]:
    return {PortKey(n, "r/1"): IbPortInfo(n, "r", 1, **kw) for n in ("a", "b")}


def test_each_end_runs_ib_write_bw_on_its_port_and_reads_its_counters_before_and_after():
    (round_,) = plan_rounds({"a": ["r/1"], "b": ["r/1"]}, 1)
    plan = round_script("a", list(round_.sessions), _infos(), {"b": "10.0.0.2"}, 7, False, token="0" * 16)
    (command,) = plan.commands.values()
    assert command.startswith("ib_write_bw -d r -i 1 ") and " -D 7 " in command
    lines = plan.script.splitlines()
    before = next(i for i, line in enumerate(lines) if line.startswith("counters b0 "))
    load = next(i for i, line in enumerate(lines) if line.startswith(("server e0 ", "client e0 ")))
    after = next(i for i, line in enumerate(lines) if line.startswith("counters a0 "))
    assert before < load < after
    assert set(plan.keys) == {"e0", "b0", "a0"} and plan.switch_ports == ()


def test_gpudirect_puts_use_cuda_before_dmabuf_and_a_known_far_end_is_read_too():
    # perftest refuses --use_cuda_dmabuf before --use_cuda (https://github.com/linux-rdma/perftest/issues/336)
    (round_,) = plan_rounds({"a": ["r/1"], "b": ["r/1"]}, 1)
    infos = _infos(gpu=3, gpu_dmabuf=True, switch_lid=7, switch_port_number=11)
    plan = round_script("a", list(round_.sessions), infos, {}, 1, False, token="0" * 16)
    (command,) = plan.commands.values()
    assert "--use_cuda=3 --use_cuda_dmabuf" in command
    assert plan.switch_ports == ("p0",) and {"sb0", "sa0"} <= set(plan.keys)

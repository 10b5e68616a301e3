"""run_beside_partners over a real fleet store: the single-node stages on the nodes under test
only, the group stages on those that passed them beside the partners, and a partner (an accepted
node of the delivery, still in burnin) never moved to failed by a group stage's finding."""

from __future__ import annotations

import pytest

from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from burnin.result import Action, Result, critical
from burnin.stages import runner as runner_mod
from burnin.stages.beside import run_beside_partners
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import BurninRun
from tests.fleet import walk_to
from tests.profiles import minimal

PROFILE = minimal({"gpu": {"count": 8}}, name="p")


@pytest.fixture
def store(tmp_path) -> FleetStore:
    s = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for name in ("t1", "t2", "p1"):
        s.enroll(name, rack="r", profile="p")
        walk_to(s, name, State.BURNIN)
    return s


def test_partners_join_only_the_group_stages_and_are_never_failed_by_them(monkeypatch, store) -> None:
    ran: list[tuple[str, list[str], frozenset[str]]] = []

    def single(ctx_stage: str, nodes: list[str]) -> None:
        ran.append((ctx_stage, nodes, frozenset()))

    def fake_batches(self, stage, active, outcomes):
        single(stage, sorted(active))
        done = []
        for name in active:
            bad = name == "t2"
            found = [critical("7 GPU(s) found, the profile has 8", Action.RESEAT)] if bad else []
            done.append((outcomes[name], [(Result.judged("gpu_inventory", found), "")], ""))
        self._record_many(stage, done)

    def nccl(ctx):
        ran.append(("nccl", sorted(j.name for j in ctx.jobs), ctx.partners))
        # the stage finds fault with everybody, the partner included
        bad = [critical("bus bandwidth low", Action.RMA)]
        return {j.name: [(Result.judged("nccl", bad), "")] for j in ctx.jobs}

    monkeypatch.setattr(BurninRun, "_run_batches", fake_batches)
    monkeypatch.setattr(runner_mod, "group_stages", lambda: {"nccl": nccl})
    jobs = {n: NodeJob(n, PROFILE, None) for n in ("t1", "t2", "p1")}

    def make_run(stages, partners):
        return BurninRun(store, None, stages, partners=partners)

    told = []
    out = run_beside_partners(
        make_run, jobs, ["preflight", "nccl"], ["t1", "t2"], ["p1"], lambda s, p: told.append((s, p))
    )
    assert ran == [("preflight", ["t1", "t2"], frozenset()), ("nccl", ["p1", "t1"], frozenset({"p1"}))]
    assert told == [(["t1"], ["p1"])]
    assert [s.stage for s in out["t1"].stages] == ["preflight", "nccl"]
    assert {n: store.get_node(n).state for n in jobs} == {"t1": "failed", "t2": "failed", "p1": "burnin"}

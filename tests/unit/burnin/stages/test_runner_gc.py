"""A run judges with the young generation collected less often, and gives the setting back."""

from __future__ import annotations

import gc

import pytest

from burnin.result import Result
from burnin.stages import runner as runner_mod
from burnin.stages.jobs import NodeJob
from burnin.stages.runner import BurninRun
from tests.profiles import shipped


def _jobs() -> list[NodeJob]:
    return [NodeJob(n, shipped(), None) for n in ("n1", "n2")]


def test_a_run_raises_the_young_threshold_and_restores_it() -> None:
    before = gc.get_threshold()
    seen = []

    def engine(stage, active):
        seen.append((gc.get_threshold(), gc.get_freeze_count() > 0))
        yield [(name, [(Result.judged("a"), "")], "") for name in active]

    outcomes = BurninRun(None, None, ["preflight"], stage_engine=engine).run(_jobs())
    assert [o.verdict.value for o in outcomes] == ["PASS", "PASS"]
    assert seen == [((runner_mod.YOUNG_GC_THRESHOLD, *before[1:]), True)]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_run_that_raises_restores_the_collector_too() -> None:
    before = gc.get_threshold()

    def engine(stage, active):
        raise RuntimeError("the engine broke")
        yield  # a generator, as the runner takes it

    with pytest.raises(RuntimeError, match="the engine broke"):
        BurninRun(None, None, ["preflight"], stage_engine=engine).run(_jobs())
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0

"""A burn-in of suspect nodes beside proven partners: the single-node stages on the nodes under
test, then the group stages (ib, nccl) on those that passed them together with the partners.

The nightly (burnin/service/nightly.py) and an acceptance (burnin/run/session.py's ``run_rack``
with partners, which burnin/accept/run.py asks for) both run this. The partners never run the
single-node stages (nothing is asked of them but to be proven), and the group stages are told
who they are (``BurninRun.partners``, ``GroupContext.partners``): the ib stage pairs the
suspects' ports with theirs, the nccl stage anchors its localisation on them, and the run never
moves a partner to ``failed`` (burnin/stages/runner.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from burnin.result import PASSING
from burnin.stages import is_group_stage
from burnin.stages.jobs import BurninOutcome, NodeJob
from burnin.stages.runner import BurninRun

# (stages, partners) -> the runner of those stages, with the caller's store, run, settings, hooks
MakeRun = Callable[[list[str], frozenset[str]], BurninRun]


def run_beside_partners(
    make_run: MakeRun,
    jobs: Mapping[str, NodeJob],
    stages: Sequence[str],
    tested: Sequence[str],
    partners: Sequence[str],
    on_group: Callable[[list[str], list[str]], None] | None = None,
) -> dict[str, BurninOutcome]:
    """Node -> its outcome (the tested nodes', and the partners' of the group stages).
    ``on_group(still, partners)`` is told before the group stages start."""
    single = [s for s in stages if not is_group_stage(s)]
    group = [s for s in stages if is_group_stage(s)]
    outcomes: dict[str, BurninOutcome] = {}
    if single and tested:
        for o in make_run(single, frozenset()).run([jobs[n] for n in tested]):
            outcomes[o.node] = o
    still = [n for n in tested if n not in outcomes or outcomes[n].verdict in PASSING]
    if group and still:
        if on_group is not None:
            on_group(still, list(partners))
        for o in make_run(group, frozenset(partners)).run([jobs[n] for n in [*still, *partners]]):
            if o.node in outcomes:
                outcomes[o.node].stages.extend(o.stages)
                outcomes[o.node].final_state = o.final_state
            else:
                outcomes[o.node] = o
    return outcomes

"""`burnin golden` as one call: judge the rack's nodes, record who enters or leaves golden, and
build the export records. Prints nothing and writes no file; the command renders the result.

Kept apart from burnin/golden/rules.py (the pure rules, which burnin/golden/export.py reads) because it
builds export records: golden.py importing export would be a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bringup.fleet.reads import collector_paused
from bringup.fleet.runs import sweep_abandoned
from bringup.fleet.store import FleetStore, redact_url
from bringup.inventory.rack import Rack
from burnin.golden import export
from burnin.golden import rules as golden
from burnin.service import slurm


@dataclass
class GoldenSelection:
    meta: export.ExportMeta
    golden: list[dict[str, Any]]  # export records of the golden nodes, in rack order
    excluded: list[dict[str, Any]]  # export records of the others, with their reasons
    moves: list[golden.Move]  # the lifecycle moves the decisions call for
    applied: list[golden.Applied] = field(default_factory=list)  # empty on a dry run
    dry_run: bool = False
    abandoned: list[str] = field(default_factory=list)  # runs found with their controller gone, marked

    @property
    def total(self) -> int:
        return len(self.golden) + len(self.excluded)


def select_and_apply(
    store: FleetStore,
    rack: Rack,
    now: datetime,
    max_age: timedelta | None,
    stages: Sequence[str] | None,
    *,
    dry_run: bool = False,
    address: str = "ip",
    hardware: bool = True,
    not_run: Mapping[str, str] | None = None,
) -> GoldenSelection:
    """Decide every node of ``rack``, apply the moves (unless ``dry_run``), and return the golden
    and excluded records. A node whose move to golden could not be recorded is excluded.

    ``hardware``: the records carry each node's GPUs, HCAs and firmware (the json and csv
    exports, ``export.HARDWARE_FORMATS``); without it no evidence is read. A fixed number of
    queries for the rack, however many nodes it has (the moves are one transaction).

    ``not_run``: node -> why the scheduler will not run it (``read_scheduler``): such a node is
    excluded with that reason, and its lifecycle state stays as the rules have it (golden)."""
    abandoned = []
    if not dry_run:  # runs whose controller is gone are recorded abandoned (a dry run only ignores them)
        abandoned = [f"{r.kind} run {r.id} abandoned: {r.end_reason}" for r in sweep_abandoned(store)]
    with collector_paused():
        evidence = golden.EVIDENCE_READ if hardware else ()
        facts = golden.gather(store, rack, evidence)
        judged = golden.decide(facts, now, max_age, list(stages) if stages else None)
        moves = {d.node: m for _, rules, d in judged if (m := golden.plan_move(d, rules)) is not None}
        applied = [] if dry_run else golden.apply(store, list(moves.values()))
        golden.after_moves(store, rack.name, facts, applied)  # the records show the state now
        failed_moves = {a.move.node: a.error for a in applied if not a.done}
        store_url = redact_url(store.url)
        golden_records, excluded_records = [], []
        for fact, rules, decision in judged:
            if decision.golden and decision.node in failed_moves:
                decision = golden.Decision(
                    decision.node,
                    decision.state,
                    False,
                    (f"could not become golden: {failed_moves[decision.node]}",),
                    decision.stages,
                    decision.run_id,
                )
            decision = golden.held_by_scheduler(decision, (not_run or {}).get(decision.node))
            if not decision.golden:
                excluded_records.append(export.excluded_record(fact, decision))
                continue
            golden_records.append(
                export.golden_record(fact, decision, rules, store_url, address, hardware=hardware)
            )
    distinct = tuple(dict.fromkeys(rules for _, rules, _ in judged))
    meta = export.ExportMeta(rack.name, now, store_url, distinct)
    return GoldenSelection(
        meta, golden_records, excluded_records, list(moves.values()), applied, dry_run, abandoned
    )


@dataclass(frozen=True)
class SchedulerView:
    """What the scheduler will not run, for the export: node -> why; ``note`` when not read."""

    not_run: dict[str, str]
    note: str = ""


def read_scheduler(rack: Rack) -> SchedulerView:
    """Slurm's view of the cluster (one `sinfo` call, the rack's ``slurm_conf`` when it names
    one), as the nodes it will not run. A rack that names its Slurm must be read: without it a
    drained node would go to a trainer, so that failure is an error. Without ``slurm_conf``, a
    Slurm that cannot be read (no client, no controller: no Slurm here) is said in ``note``."""
    conf = next((h.vars.get("slurm_conf") for h in rack.hosts if h.vars.get("slurm_conf")), None)
    try:
        view = slurm.cluster_nodes(str(conf) if conf else None)
    except slurm.SlurmError as exc:
        if conf:
            raise slurm.SlurmError(
                f"rack {rack.name}: Slurm's view of its nodes could not be read ({exc}); "
                "`burnin golden --ignore-scheduler` exports without it"
            ) from exc
        return SchedulerView(
            {}, f"the scheduler's view was not read ({exc}): nodes Slurm will not run are not left out"
        )
    return SchedulerView(golden.not_run_by_scheduler(view))

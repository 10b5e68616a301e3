"""Fleet reliability figures from the per-node signals (pure): the measured failure rate, overall
and by component, the top failure causes, and the planning figures (MTTF by job size, E[ETTR],
the checkpoint interval for a target ETTR) from that rate or one given to plan with.

With Slurm accounting read, the node failures only Slurm saw (``burnin.history.node_fail``: jobs
ended NODE_FAIL by a node the store has no failure of then) count too, as kind
``slurm_node_fail``, each with the sacct rows it came from."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from burnin.history import reliability as rel
from burnin.history.node_fail import KIND, NodeFailMerge, SlurmFailure
from burnin.history.signals import NodeSignals

TOP_CAUSES = 10


@dataclass(frozen=True)
class JobPlan:
    """The job a user plans: its size, checkpoint interval, restart cost, wished ETTR."""

    gpus: int | None = None
    checkpoint: timedelta = timedelta(minutes=60)
    restart: timedelta = timedelta(minutes=5)
    target_ettr: float | None = None


@dataclass
class Reliability:
    rack: str | None
    start: datetime
    end: datetime
    nodes: int
    node_days: float
    failures: int
    measured_rate: float | None  # per 1,000 node-days; None without node-days
    rate: float | None  # the rate the plan uses: given, else measured
    rate_source: str  # "measured" or "given (--failure-rate)"
    gpus_per_node: int
    gpus_per_node_source: str
    by_component: dict[str, dict[str, float]] = field(default_factory=dict)  # kind -> count, rate
    top_causes: list[tuple[str, int]] = field(default_factory=list)
    mttf_hours: dict[int, float] = field(default_factory=dict)
    ettr: float | None = None
    checkpoint_needed: timedelta | None = None
    plan: JobPlan = field(default_factory=JobPlan)
    # failures over time: component kind -> count per bucket of ``bucket_days`` from ``start``
    timeline: dict[str, list[int]] = field(default_factory=dict)
    bucket_days: int = 1
    accounting: str = "not read"  # Slurm accounting: what was read, or why not
    slurm_failures: list[SlurmFailure] = field(default_factory=list)  # failures only Slurm saw
    slurm_runs_in_store: int = 0  # node-caused NODE_FAIL runs the store counts already

    def to_dict(self) -> dict[str, Any]:
        p = self.plan
        return {
            "rack": self.rack,
            "window": {"start": self.start.isoformat(), "end": self.end.isoformat()},
            "nodes": self.nodes,
            "node_days": round(self.node_days, 3),
            "failures": self.failures,
            "failures_by_source": {
                "store": self.failures - len(self.slurm_failures),
                "sacct": len(self.slurm_failures),
                "sacct_node_fail_runs_counted_from_store": self.slurm_runs_in_store,
            },
            "slurm_accounting": self.accounting,
            "slurm_failures": [f.to_dict() for f in self.slurm_failures],
            "failure_rate_per_1000_node_days": {
                "measured": self.measured_rate,
                "used": self.rate,
                "source": self.rate_source,
            },
            "by_component": self.by_component,
            "top_causes": [{"cause": c, "count": n} for c, n in self.top_causes],
            "failures_over_time": {"bucket_days": self.bucket_days, "by_component": self.timeline},
            "gpus_per_node": {"value": self.gpus_per_node, "source": self.gpus_per_node_source},
            "mttf_hours": {
                str(g): (None if h == float("inf") else round(h, 3)) for g, h in self.mttf_hours.items()
            },
            "job": {
                "gpus": p.gpus,
                "checkpoint_minutes": p.checkpoint.total_seconds() / 60,
                "restart_minutes": p.restart.total_seconds() / 60,
                "expected_ettr": None if self.ettr is None else round(self.ettr, 4),
                "target_ettr": p.target_ettr,
                "checkpoint_needed_minutes": _minutes(self.checkpoint_needed),
                "formula": rel.ETTR_FORMULA,
                "source": rel.FORMULA_SOURCE,
            },
        }


def cause_of(check: str, message: str) -> str:
    """A failure cause as counted: the check and its finding with numbers and parts blurred."""
    shape = re.sub(r"\b(GPU|port|DIMM)\s+[\w:.]*\w", r"\1 #", message)
    shape = re.sub(r"(?<!Xid )\b\d+(\.\d+)?\b", "#", shape)  # an Xid's code is its cause: kept
    return f"{check}: {shape[:120]}"


def reliability(
    signals: Mapping[str, NodeSignals],
    start: datetime,
    end: datetime,
    *,
    rack: str | None,
    gpus_per_node: int,
    gpus_per_node_source: str,
    failure_rate: float | None = None,
    plan: JobPlan | None = None,
    slurm: NodeFailMerge | None = None,
    accounting: str = "not read",
) -> Reliability:
    """The figures; ``slurm``: what Slurm accounting adds (failures the store did not see)."""
    plan = plan or JobPlan()
    slurm = slurm or NodeFailMerge()
    node_days = sum(s.node_days for s in signals.values())
    failures = sum(len(s.failures) for s in signals.values()) + len(slurm.only_slurm)
    measured = rel.rate_per_1000(failures, node_days)
    rate = failure_rate if failure_rate is not None else measured
    kinds: Counter[str] = Counter()
    causes: Counter[str] = Counter()
    for s in signals.values():
        kinds.update(s.failures_by_component())
        causes.update(cause_of(c.check, c.message) for c in s.components)
    kinds.update({KIND: len(slurm.only_slurm)} if slurm.only_slurm else {})
    causes.update(f.cause for f in slurm.only_slurm)
    bucket = 1 if end - start <= timedelta(days=62) else 7
    out = Reliability(
        rack,
        start,
        end,
        len(signals),
        node_days,
        failures,
        measured,
        rate,
        "given with --failure-rate" if failure_rate is not None else "measured",
        gpus_per_node,
        gpus_per_node_source,
        by_component={
            k: {"count": n, "per_1000_node_days": rel.rate_per_1000(n, node_days)}
            for k, n in kinds.most_common()
        },
        top_causes=causes.most_common(TOP_CAUSES),
        plan=plan,
        timeline=timeline(signals.values(), start, end, bucket, slurm.only_slurm),
        bucket_days=bucket,
        accounting=accounting,
        slurm_failures=slurm.only_slurm,
        slurm_runs_in_store=slurm.runs_matched,
    )
    if rate is not None:
        out.mttf_hours = rel.mttf_table(rate, gpus_per_node)
        if plan.gpus:
            out.ettr = rel.expected_ettr(plan.gpus, rate, gpus_per_node, plan.checkpoint, plan.restart)
            if plan.target_ettr is not None:
                out.checkpoint_needed = rel.checkpoint_for(
                    plan.target_ettr, plan.gpus, rate, gpus_per_node, plan.restart
                )
    return out


def timeline(
    signals: Iterable[NodeSignals],
    start: datetime,
    end: datetime,
    days: int,
    slurm: Iterable[SlurmFailure] = (),
) -> dict[str, list[int]]:
    """Component failures per kind (and the failures only Slurm saw), counted in buckets of
    ``days`` days from ``start``."""
    width = timedelta(days=days)
    n = max(1, math.ceil((end - start) / width))
    out: dict[str, list[int]] = {}
    dated = [(c.component, c.time) for s in signals for c in s.components]
    dated += [(KIND, f.time) for f in slurm]
    for kind, time in dated:
        if start <= time <= end:
            out.setdefault(kind, [0] * n)[min(n - 1, int((time - start) / width))] += 1
    return dict(sorted(out.items(), key=lambda kv: -sum(kv[1])))


def _minutes(d: timedelta | None) -> float | None:
    if d is None:
        return None
    return None if d == timedelta.max else round(d.total_seconds() / 60, 2)

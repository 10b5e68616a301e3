"""`burnin reliability` and `burnin lemons` as library calls: read the window's history from the
store (``read``), judge it (the pure modules), and for ``--apply`` flag the lemons.

A flagged lemon carries ``Node.hardware["lemon"]`` (when, the rules, the evidence) and a ``lemon``
event; the golden selection keeps it out until ``clear_lemon`` (an operator, after the repair
that fixes it) removes the flag with a ``lemon_cleared`` event. Nothing here retires a node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bringup.core.errors import UserError
from bringup.core.yamlio import load_yaml_file
from bringup.fleet.models import utcnow
from bringup.fleet.select import load_valid_rack
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import Rack
from burnin.golden.rules import LEMON_FLAG
from burnin.history.figures import JobPlan, Reliability, reliability
from burnin.history.jobs import JobSignals, job_signals
from burnin.history.lemons import Lemon, LemonPolicy, find_lemons, parse_policy
from burnin.history.node_fail import slurm_only_failures
from burnin.history.read import FleetHistory, read_signals
from burnin.parsers.sacct import NodeEvent, SacctJob
from burnin.service import slurm

# (start, end) -> Slurm accounting over that window: job runs and node events.
AccountingReader = Callable[[datetime, datetime], tuple[list[SacctJob], list[NodeEvent]]]

POLICY_FILE = Path("policies") / "lemons.yml"
LEMON_EVENT = "lemon"
CLEARED_EVENT = "lemon_cleared"
DEFAULT_GPUS_PER_NODE = 8  # an HGX baseboard; used only when no profile says


def load_policy(inventory_dir: Path) -> tuple[LemonPolicy, str]:
    """The policy in ``<inventory>/policies/lemons.yml``, else the packaged defaults; and which."""
    path = inventory_dir / POLICY_FILE
    if not path.is_file():
        return LemonPolicy(), "defaults (burnin/history/lemons.py)"
    return parse_policy(load_yaml_file(path), str(path)), str(path)


def gpus_per_node(
    rack: str | None, inventory_dir: Path | None, given: int | None, loaded: Rack | None = None
) -> tuple[int, str]:
    """GPUs per node for the job-size figures: given, else the rack's profile(s), else 8.
    ``loaded``: the rack already loaded by the caller (not read again: 10,000 hosts take 0.6 s)."""
    if given is not None:
        if given < 1:
            raise UserError(f"--gpus-per-node must be at least 1, not {given}")
        return given, "given (--gpus-per-node)"
    if rack:
        if loaded is None:
            loaded, _ = load_valid_rack(rack, inventory_dir)
        counts = Counter(p.gpu.count for p in loaded.profiles.values())
        if counts:
            value, _n = counts.most_common(1)[0]
            names = ", ".join(sorted(loaded.profiles))
            return value, f"profile {names} (gpu.count)"
    return DEFAULT_GPUS_PER_NODE, "assumed (8 GPUs per node, an HGX baseboard; no rack profile given)"


def fleet_reliability(
    store: FleetStore,
    rack: str | None,
    window: timedelta,
    inventory_dir: Path | None,
    *,
    failure_rate: float | None = None,
    plan: JobPlan | None = None,
    gpus: int | None = None,
    now: datetime | None = None,
    sacct: bool = False,
    accounting: AccountingReader | None = None,
    loaded: Rack | None = None,
) -> Reliability:
    """The figures over the window; with ``sacct`` (the rack's Slurm) or an ``accounting`` reader,
    the node failures only Slurm saw (NODE_FAIL jobs the store has no failure for) count too."""
    per_node, source = gpus_per_node(rack, inventory_dir, gpus, loaded)
    if accounting is None and sacct:
        accounting = rack_accounting(rack, inventory_dir)
    history = read_signals(store, rack, window, now)
    jobs, status = read_accounting(accounting, history)
    return reliability(
        history.signals,
        history.start,
        history.end,
        rack=rack,
        gpus_per_node=per_node,
        gpus_per_node_source=source,
        failure_rate=failure_rate,
        plan=plan,
        slurm=slurm_only_failures(history.signals, jobs) if jobs else None,
        accounting=status,
    )


def read_accounting(
    accounting: AccountingReader | None, history: FleetHistory
) -> tuple[dict[str, JobSignals], str]:
    """Node -> its Slurm accounting signals over the history's window, and what was read (or why
    not: a Slurm that cannot answer leaves the store's signals standing, said, never fatal)."""
    if accounting is None:
        return {}, "not read"
    try:
        runs, events = accounting(history.start, history.end)
    except slurm.SlurmError as exc:
        return {}, f"not read: {exc}"
    jobs = job_signals(runs, events, history.start, history.end)
    return jobs, f"read: {len(runs)} job runs, {len(events)} node events (sacct, sacctmgr)"


@dataclass
class LemonReport:
    rack: str | None
    window: str
    policy_source: str
    policy: LemonPolicy
    nodes: int
    lemons: list[Lemon] = field(default_factory=list)
    flagged: list[str] = field(default_factory=list)  # newly flagged by --apply
    already: list[str] = field(default_factory=list)  # flagged before
    accounting: str = "not read"  # Slurm accounting: what was read, or why not

    def to_dict(self) -> dict[str, Any]:
        return {
            "rack": self.rack,
            "window": self.window,
            "slurm_accounting": self.accounting,
            "policy": {"source": self.policy_source, **self.policy.__dict__},
            "nodes": self.nodes,
            "lemons": [lemon.to_dict() for lemon in self.lemons],
            "flagged": self.flagged,
            "already_flagged": self.already,
        }


def fleet_lemons(
    store: FleetStore,
    rack: str | None,
    window: timedelta | None,
    inventory_dir: Path,
    *,
    apply: bool = False,
    actor: str | None = None,
    now: datetime | None = None,
    sacct: bool = False,
    accounting: AccountingReader | None = None,
) -> LemonReport:
    """Lemon candidates over the window from the store's history and, with ``sacct`` (the rack's
    Slurm, ``rack_accounting``) or an ``accounting`` reader, Slurm's job records; ``apply`` flags them."""
    if accounting is None and sacct:
        accounting = rack_accounting(rack, inventory_dir)
    policy, source = load_policy(inventory_dir)
    span = window or timedelta(days=policy.window_days)
    label = f"{span.total_seconds() / 86400:g} days"
    history = read_signals(store, rack, span, now)
    report = LemonReport(rack, label, source, policy, len(history.signals))
    jobs, report.accounting = read_accounting(accounting, history)
    report.lemons = find_lemons(history.signals, policy, label, jobs)
    if apply:
        for lemon in report.lemons:
            node = history.nodes[lemon.node]
            if (node.hardware or {}).get(LEMON_FLAG):
                report.already.append(lemon.node)
                continue
            flag_lemon(store, lemon, actor)
            report.flagged.append(lemon.node)
    return report


def rack_accounting(rack: str | None, inventory_dir: Path | None) -> AccountingReader:
    """Slurm accounting of the rack's cluster (its inventory's ``slurm_conf``; without a rack,
    Slurm's default configuration)."""
    conf = None
    if rack:
        loaded, _ = load_valid_rack(rack, inventory_dir)
        conf = (loaded.hosts[0].vars if loaded.hosts else {}).get("slurm_conf")
    return lambda start, end: slurm.accounting(start, end, conf)


def flag_lemon(store: FleetStore, lemon: Lemon, actor: str | None = None) -> None:
    """Mark a node a lemon: the flag the golden selection honours, and the event that says why."""
    node = store.get_node(lemon.node)
    flag = {"since": utcnow().isoformat(), "rules": lemon.rules, "evidence": lemon.summary}
    store.update_node(lemon.node, hardware={**(node.hardware or {}), LEMON_FLAG: flag})
    store.record_event(
        lemon.node,
        LEMON_EVENT,
        f"lemon: {lemon.summary}",
        actor=actor,
        details={"rules": lemon.rules, "evidence": lemon.evidence, "sources": lemon.sources},
    )


class NotALemon(UserError, ValueError):
    pass


def clear_lemon(store: FleetStore, name: str, reason: str, actor: str | None = None) -> dict[str, Any]:
    """An operator clears a node's lemon flag (after the repair that fixes it); returns the flag."""
    node = store.get_node(name)
    flag = (node.hardware or {}).get(LEMON_FLAG)
    if not flag:
        raise NotALemon(f"{name}: not flagged a lemon (nothing to clear)")
    store.update_node(name, hardware={k: v for k, v in (node.hardware or {}).items() if k != LEMON_FLAG})
    store.record_event(
        name, CLEARED_EVENT, f"lemon flag cleared: {reason}", actor=actor, details={"flag": flag}
    )
    return dict(flag)

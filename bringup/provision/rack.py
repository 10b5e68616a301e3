"""`bringup provision` as one library call: plan a rack, check it, provision it, report it.

``provision_rack`` loads the rack and its ``--nodes`` (``bringup.fleet.select``), plans every node
(``orchestrator.plan_rack``: provision, resume, skip or refuse, by the lifecycle gate), and then:

- ``dry_run``: asks the backend what it would do per node and returns the plan;
- a problem in the plan (an undiscovered node, a missing MAC) or in the backend's preflight
  (a port in use, another DHCP server): returns them with ``stopped`` set, nothing touched;
- otherwise runs the orchestrator batch by batch and returns a row per node.

Nothing here prints; ``on_progress(node, line)`` and ``on_result(ProvisionResult)`` let the command
show progress. An interrupt (KeyboardInterrupt) propagates after the backend is closed: the
nodes of the current batch stay in ``provisioning`` for the next run to resume.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.fleet.select import load_valid_rack, pick_hosts, split_nodes
from bringup.fleet.store import FleetStore
from bringup.provision.orchestrator import (
    DEFAULT_BATCH,
    PROVISION,
    RESUME,
    NodePlan,
    Orchestrator,
    ProvisionResult,
    backend_name,
    make_backend,
    plan_rack,
    rack_vars,
)
from bringup.redfish.endpoint import TransportOptions
from bringup.redfish.targets import plain_http_warnings, targets_for


@dataclass
class ProvisionRequest:
    rack: str
    inventory_dir: Path
    nodes: tuple[str, ...] | list[str] | None = None
    batch: int = DEFAULT_BATCH
    dry_run: bool = False
    force: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)  # per-host variables (PXE watchdog)
    transport: TransportOptions = field(default_factory=TransportOptions)


@dataclass
class ProvisionReport:
    rack: str
    backend: str
    rows: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # for the whole run (plain-HTTP BMCs)
    stopped: str | None = None  # why nothing was touched, when problems stopped the run
    run_id: int | None = None
    dry_run: bool = False
    seconds: float | None = None  # None: nothing was run

    @property
    def ok(self) -> bool:
        if self.dry_run or self.stopped:
            return not self.problems
        return all(r["ok"] for r in self.rows)


def _override(plan: NodePlan, overrides: dict[str, Any]) -> NodePlan:
    if plan.target is None or not overrides:
        return plan
    target = dataclasses.replace(plan.target, hostvars={**plan.target.hostvars, **overrides})
    return dataclasses.replace(plan, target=target)


def row(plan: NodePlan, result: ProvisionResult | None, would: str | None = None) -> dict[str, Any]:
    """One node's row: the plan, and what happened (or would happen) to it."""
    out: dict[str, Any] = {
        "name": plan.name,
        "key": plan.target.key if plan.target else None,
        "state_before": plan.state,
        "action": plan.action,
    }
    if result is not None:
        out.update(
            state=result.after,
            ok=result.ok,
            reason=result.reason,
            ip=result.ip,
            seconds=result.seconds,
            findings=result.findings,
            notes=result.notes,
        )
    else:
        out.update(state=plan.state, ok=not plan.counts_as_failed, reason=plan.reason, ip=plan.ip)
        if would is not None:
            out["would"] = would
    return out


def provision_rack(
    store: FleetStore,
    req: ProvisionRequest,
    *,
    on_progress: Callable[[str, str], None] | None = None,
    on_result: Callable[[ProvisionResult], None] | None = None,
) -> ProvisionReport:
    """Take the rack's discovered nodes to provisioned (see the module docstring)."""
    progress = on_progress or (lambda node, line: None)
    rack, _ = load_valid_rack(req.rack, req.inventory_dir)
    only = split_nodes(req.nodes)
    targets = targets_for(rack, pick_hosts(rack, only), allow_http=req.transport.allow_http)
    records = {n.name: n for n in store.list_nodes(rack=rack.name)}
    planned = plan_rack(rack, records, {t.name: t for t in targets}, only, req.force)
    plans = [_override(p, req.overrides) for p in planned.plans]
    vars_, var_problems = rack_vars(rack.hosts)
    problems = planned.problems + var_problems
    name = backend_name(vars_)
    work = [p.target for p in plans if p.action in (PROVISION, RESUME) and p.target is not None]
    report = ProvisionReport(rack.name, name, [], problems, plain_http_warnings(targets), dry_run=req.dry_run)

    if req.dry_run:
        backend = make_backend(name, rack.name, vars_, req.inventory_dir, req.transport)
        try:
            lines = dict(zip([t.name for t in work], backend.plan(work), strict=False))
            # A backend that cannot plan any node says why; the dry run then exits as the run
            # would stop (README.md, "Exit codes"), not 0 beside rows that say "cannot plan".
            if work and (cannot := getattr(backend, "plan_problems", None)) is not None:
                report.problems += cannot()
        finally:
            backend.close()
        report.rows = [row(p, None, lines.get(p.name, p.reason)) for p in plans]
        return report
    if problems:
        report.stopped = "nothing was touched"
        return report
    if not work:
        report.rows = [row(p, None) for p in plans]
        return report

    backend = make_backend(name, rack.name, vars_, req.inventory_dir, req.transport)
    t0 = time.monotonic()
    try:
        found = backend.preflight(work)
        if found:
            report.problems, report.stopped = list(found), "no node was touched"
            return report
        for line in getattr(backend, "checked", []):
            progress("preflight", line)
        orch = Orchestrator(
            store, backend, rack=rack.name, batch_size=req.batch, on_progress=progress, on_result=on_result
        )
        params = {
            "nodes": [t.name for t in work],
            "batch": req.batch,
            "force": req.force,
            "overrides": req.overrides,
        }
        results = orch.run(work, params)
    finally:
        backend.close()
    by_name = {r.name: r for r in results}
    report.rows = [row(p, by_name.get(p.name)) for p in plans]
    report.run_id, report.seconds = orch.run_id, time.monotonic() - t0
    return report

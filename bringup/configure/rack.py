"""`bringup configure` as one library call: pick the rack's nodes, run the playbook, record it.

``configure_rack`` loads the rack and ``--nodes`` and applies the lifecycle gate
(``bringup.fleet.select``, ``Step.CONFIGURE``); refused nodes become ``skipped`` rows. When some node
may be configured it opens a ``configure`` run, runs playbooks/site.yml on those nodes
(``runner.run_playbook``), writes every outcome onto its node record in one transaction
(``record.record_outcomes``) and finishes the run. It returns a :class:`ConfigureReport`; nothing here prints. A command that
wants progress passes ``watch(hosts)``: a context manager yielding the callback for each host
event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from bringup.configure.hostkeys import pinned_hosts
from bringup.configure.inventory import build_inventory, host_vars, imex_domain
from bringup.configure.outcome import HostOutcome
from bringup.configure.record import ConfigureResult, record_outcomes
from bringup.configure.runner import DEFAULT_BATCH, DEFAULT_TASK_TIMEOUT, run_playbook
from bringup.fleet.lifecycle import Step
from bringup.fleet.runs import run_ledger
from bringup.fleet.select import select
from bringup.fleet.store import FleetStore

BAD = ("failed", "unreachable", "not-run", "timed-out")
Watch = Callable[[list[str]], AbstractContextManager[Callable[[HostOutcome], None]]]


@dataclass
class ConfigureRequest:
    rack: str
    inventory_dir: Path | None
    nodes: str | Sequence[str] | None = None
    tags: list[str] = field(default_factory=list)
    check: bool = False
    batch: int = DEFAULT_BATCH
    force: bool = False
    timeout: int | None = None  # the whole run, seconds; None: runner.default_timeout
    task_timeout: int = DEFAULT_TASK_TIMEOUT


@dataclass
class ConfigureReport:
    rack: str
    results: list[ConfigureResult]
    run_id: int | None = None  # None: no node could be configured, nothing was run
    playbook_failure: str | None = None  # ansible-playbook failed and no host says why

    @property
    def bad(self) -> list[ConfigureResult]:
        return [r for r in self.results if r.result in BAD]


@contextlib.contextmanager
def _no_watch(_hosts: list[str]) -> Iterator[Callable[[HostOutcome], None]]:
    yield lambda _outcome: None


def configure_rack(store: FleetStore, req: ConfigureRequest, watch: Watch | None = None) -> ConfigureReport:
    """Configure the rack's nodes that the gate admits (see the module docstring)."""
    sel = select(store, req.rack, req.inventory_dir, req.nodes, Step.CONFIGURE, req.force)
    rack = sel.rack
    report = ConfigureReport(
        rack.name, [ConfigureResult(r.name, "skipped", r.state, message=r.reason) for r in sel.gate.refused]
    )
    targets = sel.gate.admitted
    if not targets:
        return report

    names = [a.name for a in targets]
    hosts = {
        a.name: host_vars(a.name, a.host.vars, rack.path.parent, rack.profiles[a.host.profile], a.node.ip)
        for a in targets
    }
    if any(h["nvidia_imex_enabled"] for h in hosts.values()):
        # IMEX's node list is the whole rack, not this run's nodes (role nvidia_imex).
        ips = {n.name: n.ip for n in store.list_nodes(rack=rack.name)}
        domain = imex_domain(rack, ips)
        for h in hosts.values():
            if h["nvidia_imex_enabled"]:
                h["nvidia_imex_nodes"] = domain
    params = {
        "nodes": names,
        "tags": req.tags,
        "check": req.check,
        "batch": req.batch,
        "timeout": req.timeout,
        "task_timeout": req.task_timeout,
    }
    # The run claims its nodes (a burn-in or provision holding one refuses this run) and records
    # how it ended, whatever happens (bringup/fleet/runs.py).
    with (
        run_ledger(store, "configure", rack.name, nodes=names, params=params) as run,
        pinned_hosts(hosts, {a.name: a.node for a in targets}) as pinned,  # the store's host keys
    ):
        inventory = build_inventory(rack.name, pinned)
        report.run_id = run.id
        with (watch or _no_watch)(names) as on_event:
            result = run_playbook(
                inventory,
                names,
                tags=req.tags,
                check=req.check,
                batch=req.batch,
                on_event=on_event,
                timeout=req.timeout,
                task_timeout=req.task_timeout,
            )
        said_why = any(o.status in ("failed", "unreachable", "timed-out") for o in result.outcomes.values())
        if result.rc != 0 and not said_why:
            # ansible-playbook failed and no host says why (a syntax error, a missing role...).
            run.finish("error", f"ansible-playbook failed (rc={result.rc})", evidence=result.stdout)
            tail = "\n".join(result.stdout.splitlines()[-15:])
            report.playbook_failure = f"ansible-playbook failed (rc={result.rc}, {result.status}):\n{tail}"
            return report
        fresh = {n.name: n for n in store.list_nodes(rack=rack.name)}  # the run took a while
        pairs = [(fresh.get(a.name) or store.get_node(a.name), result.outcomes[a.name]) for a in targets]
        report.results += record_outcomes(store, pairs, run.id, check=req.check, full=not req.tags)
        run.finish("failed" if report.bad else "done", evidence=result.stdout)
    return report

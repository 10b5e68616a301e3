"""Rack-wide BMC operations as library functions: discover, power, boot and the BMC job queue.

Each function loads the rack (``bringup.fleet.select``), enrolls hosts the fleet store does not know
yet, applies the state gate where the operation changes a node (power and boot; discovery skips
retired nodes), walks the BMCs concurrently (``fanout``), records every node's outcome in the
store as it arrives, and returns a :class:`RackResult` whose ``rows`` the command renders (a
table, or ``--json``). One failing BMC is one failed row, never a failed call. Nothing here
prints: a command that wants a progress bar passes ``watch``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.fleet.enroll import enroll_host
from bringup.fleet.lifecycle import Step
from bringup.fleet.models import utcnow
from bringup.fleet.runs import live_holders, run_ledger
from bringup.fleet.select import gate_hosts, load_valid_rack, pick_hosts, split_nodes
from bringup.fleet.store import FleetStore
from bringup.redfish import vmedia
from bringup.redfish.boot import set_boot_once
from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.discovery import HARDWARE_KEYS, Discovery, discover
from bringup.redfish.endpoint import PLAIN_HTTP_NOTE, TransportOptions, transport_details
from bringup.redfish.errors import InventoryProblem, NotSupported, Refused
from bringup.redfish.fanout import Outcome, Task, default_concurrency, fan_out
from bringup.redfish.power import PowerControl, PowerOptions
from bringup.redfish.targets import Target, plain_http_warnings, targets_for

# watch(label, total) -> a context manager yielding a callback called once per finished node.
Watch = Callable[[str, int], AbstractContextManager[Callable[[Outcome[Any]], None]]]
FLAGGED = ("serial-changed", "serial-conflict")


@dataclass
class RackResult:
    """What a rack-wide operation did: one row per node (``ok``, ``error``, the details)."""

    rack: str
    rows: list[dict[str, Any]]
    enrolled: list[str] = field(default_factory=list)  # hosts enrolled on the way
    skipped: dict[str, str] = field(default_factory=dict)  # node -> why the gate left it out
    run_id: int | None = None
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)  # for the whole run (plain-HTTP BMCs)

    @property
    def failed(self) -> int:
        return sum(not r.get("ok", True) for r in self.rows)


@dataclass
class RackJob:
    """Where and how: the store, the rack and its --nodes, BMC transport and concurrency."""

    store: FleetStore
    rack: str
    inventory_dir: Path | None
    nodes: tuple[str, ...] | list[str] | None = None
    transport: TransportOptions = field(default_factory=TransportOptions)
    concurrency: int | None = None  # None: every BMC at once up to fanout.MAX_CONCURRENCY
    watch: Watch | None = None


# -- shared plumbing ----------------------------------------------------------------------------


def tls_details(options: TransportOptions, target: Target | None = None) -> dict[str, Any]:
    """The TLS note of one node's events: its own endpoint's, never the run's for plain HTTP."""
    return transport_details(options, target.endpoint if target else None)


def run_tls_details(options: TransportOptions, targets: list[Target]) -> dict[str, Any]:
    """The TLS note of a run: plain HTTP when every BMC is, else the TLS options and the
    nodes reached over plain HTTP."""
    plain = [t.name for t in targets if t.endpoint is not None and t.endpoint.plain_http]
    if plain and len(plain) == len(targets):
        return {"tls": PLAIN_HTTP_NOTE, "insecure": True, "plain_http": plain}
    return {**tls_details(options), **({"plain_http": plain} if plain else {})}


def _targets(job: RackJob) -> tuple[str, list[Target], list[str]]:
    """The rack's (or --nodes') targets, each made sure to be in the fleet store."""
    rack, _ = load_valid_rack(job.rack, job.inventory_dir)
    targets = targets_for(rack, pick_hosts(rack, split_nodes(job.nodes)), allow_http=job.transport.allow_http)
    known = {n.name for n in job.store.list_nodes(rack=rack.name)}
    enrolled = []
    for t in targets:
        if t.name not in known:
            enroll_host(job.store, rack.name, t.host)
            enrolled.append(t.name)
    return rack.name, targets, enrolled


def _refusals(job: RackJob, step: Step | None, targets: list[Target], force: bool) -> dict[str, str]:
    """Node -> why it is refused: the gate (DESIGN idea 8: golden nodes need --force), or another
    live run holds it (a power cycle or a PXE boot in the middle of a burn-in or an install
    destroys that run's work; ``--force`` does not override a claim). ``step`` None: no gate."""
    refused = {}
    if step is not None:
        gate = gate_hosts(job.store, step, [t.host for t in targets], force)
        refused = {r.name: f"{r.name} is {r.reason}" for r in gate.refused}
    now = utcnow()
    for name, h in live_holders(job.store, [t.name for t in targets if t.name not in refused]).items():
        refused[name] = (
            f"{name} is held by {h.what(now)}: wait for it, or end it (burnin runs abort {h.run_id})"
        )
    return refused


@contextlib.contextmanager
def _holding(
    job: RackJob, kind: str, rack: str, targets: list[Target], refused: dict[str, str], params: dict[str, Any]
) -> Iterator[Callable[[list[Outcome[Any]]], None]]:
    """A run of ``kind`` that holds the nodes it acts on while it works; yields ``done(outcomes)``
    to record how it went (a claim taken meanwhile by another run: NodesBusy, nothing done)."""
    acting = [t.name for t in targets if t.name not in refused]
    with run_ledger(job.store, kind, rack, nodes=acting, params={**params, "nodes": acting}) as run:

        def done(outcomes: list[Outcome[Any]]) -> None:
            failed = sum(not o.ok for o in outcomes if o.name in acting)
            run.finish("done" if not failed else "failed" if failed == len(acting) else "partial")

        yield done


def _task(target: Target, work: Callable[[RedfishClient], Any], options: TransportOptions) -> Task[Any]:
    if target.endpoint is None:

        def fail() -> Any:
            raise InventoryProblem(target.problem or "no BMC endpoint")

        return Task(target.name, fail)
    endpoint = target.endpoint

    def run() -> Any:
        with RedfishClient(endpoint, options) as client:
            return work(client)

    return Task(target.name, run, endpoint.redact)


def _refused_task(target: Target, why: str) -> Task[Any]:
    def refuse() -> Any:
        raise Refused(why)

    return Task(target.name, refuse)


@contextlib.contextmanager
def _no_watch(_label: str, _total: int) -> Iterator[Callable[[Outcome[Any]], None]]:
    yield lambda _outcome: None


def _run(
    job: RackJob, label: str, tasks: list[Task[Any]], save: Callable[[Outcome[Any]], None]
) -> list[Outcome[Any]]:
    with (job.watch or _no_watch)(label, len(tasks)) as seen:

        def done(outcome: Outcome[Any]) -> None:
            save(outcome)
            seen(outcome)

        return fan_out(tasks, job.concurrency, done)


def error_of(outcome: Outcome[Any]) -> dict[str, str] | None:
    if outcome.error is None:
        return None
    return {"kind": outcome.error.kind, "message": outcome.error.message}


def _record_outcome(
    store: FleetStore,
    outcome: Outcome[Any],
    kind: str,
    label: str,
    details: dict[str, Any],
    summary: Callable[[Any], str],
    record: Callable[[Any], dict[str, Any]],
) -> None:
    """One event per node: ``kind`` with what was done, or ``kind-failed`` with why not."""
    if outcome.ok:
        value = outcome.value
        store.record_event(
            outcome.name, kind, f"{label}: {summary(value)}", details={**details, **record(value)}
        )
    else:
        assert outcome.error is not None
        store.record_event(
            outcome.name,
            f"{kind}-failed",
            f"{label}: {outcome.error}",
            details={**details, "error": outcome.error.kind},
        )


def _plan(what: str, targets: list[Target], refused: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "bmc": t.endpoint.url if t.endpoint else t.host.bmc_address,
            "would": "refuse: " + refused[t.name]
            if t.name in refused
            else (t.problem and f"fail: {t.problem}") or what,
        }
        for t in targets
    ]


# -- discover -----------------------------------------------------------------------------------


def discover_rack(job: RackJob, *, accept_new_serial: bool = False) -> RackResult:
    """Walk every BMC: serial, model, firmware, MACs, event log; enrolled -> discovered. Opens a
    ``discover`` run, records each node's discovery (or its failure) and finishes the run."""
    store, options = job.store, job.transport
    rack_name, targets, enrolled = _targets(job)
    gate = gate_hosts(store, Step.DISCOVER, [t.host for t in targets])
    skipped = gate.reasons()
    targets = [t for t in targets if t.name not in skipped]
    results: dict[str, str] = {}
    by_name = {t.name: t for t in targets}

    def save(outcome: Outcome[Discovery]) -> None:
        target = by_name[outcome.name]
        details = {**tls_details(options, target), "bmc": target.host.bmc_address}
        if outcome.ok and outcome.value is not None:
            d = outcome.value
            results[outcome.name] = store.record_discovery(
                outcome.name,
                d.serial,
                macs=d.macs,
                hardware=d.hardware,
                owned_keys=HARDWARE_KEYS,
                accept_new_serial=accept_new_serial,
                run_id=run.id,
                details={**details, "vendor": d.vendor, "macs": d.macs},
            )
        else:
            assert outcome.error is not None
            store.record_event(
                outcome.name,
                "discovery-failed",
                str(outcome.error),
                run_id=run.id,
                details={**details, "error": outcome.error.kind},
            )

    tasks = [_task(t, lambda c, t=t: discover(c, t.rule), options) for t in targets]
    params = {
        "nodes": [t.name for t in targets],
        "concurrency": job.concurrency or default_concurrency(len(targets)),
        **run_tls_details(options, targets),
    }
    # Reading BMCs changes nothing on a node, so discovery claims none; the ledger still records
    # how the run ended, whatever happens (bringup/fleet/runs.py).
    with run_ledger(store, "discover", rack_name, params=params) as run:
        outcomes = _run(job, "discover", tasks, save)
        flagged = [n for n, r in results.items() if r in FLAGGED]
        failed = sum(not o.ok for o in outcomes) + len(flagged)
        run.finish("ok" if not failed else ("failed" if failed == len(outcomes) else "partial"))
    rows = [_discovery_row(o, results, flagged, by_name[o.name]) for o in outcomes]
    return RackResult(rack_name, rows, enrolled, skipped, run.id, warnings=plain_http_warnings(targets))


def _discovery_row(
    o: Outcome[Discovery], results: dict[str, str], flagged: list[str], target: Target
) -> dict[str, Any]:
    d = o.value
    hw = d.hardware if d else {}
    return {
        "name": o.name,
        "ok": o.ok and o.name not in flagged,
        "result": results.get(o.name) if o.ok else "failed",
        "error": error_of(o),
        "serial": d.serial if d else None,
        "vendor": d.vendor if d else None,
        "bmc": target.endpoint.url if target.endpoint else target.host.bmc_address,
        "model": (hw.get("system") or {}).get("model"),
        "profile": target.host.profile,
        "power_state": hw.get("power_state"),
        "health_rollup": hw.get("health_rollup"),
        "macs": d.macs if d else [],
        "provisioning_nic": hw.get("provisioning_nic"),
        "event_log": hw.get("event_log"),
        "event_log_unread": hw.get("event_log_unread"),
        "warnings": d.warnings if d else [],
        "seconds": round(o.seconds, 2),
        "hardware": hw or None,
    }


# -- power --------------------------------------------------------------------------------------


def power_rack(
    job: RackJob, action: str, options: PowerOptions, *, force: bool = False, dry_run: bool = False
) -> RackResult:
    """Power nodes on, off (graceful, then forced) or cycle them, or read their power state
    (``status``: no gate, nothing recorded). Golden nodes are refused without ``force``."""
    store, transport = job.store, job.transport
    rack_name, targets, enrolled = _targets(job)
    by_name = {t.name: t for t in targets}
    refused = _refusals(job, Step.POWER, targets, force) if action != "status" else {}
    if dry_run:
        return RackResult(rack_name, _plan(f"power {action}", targets, refused), enrolled, dry_run=True)

    def work(client: RedfishClient) -> Any:
        return PowerControl(locate(client), options).run(action)

    tasks = [
        _refused_task(t, refused[t.name]) if t.name in refused else _task(t, work, transport) for t in targets
    ]

    def save(outcome: Outcome[Any]) -> None:
        if action == "status" or outcome.name in refused:
            return
        details = {**tls_details(transport, by_name[outcome.name]), "forced": force}
        _record_outcome(
            store,
            outcome,
            "power",
            f"power {action}",
            details,
            lambda r: f"{r.before} -> {r.after}",
            lambda r: r.record(),
        )

    if action == "status":
        outcomes = _run(job, f"power {action}", tasks, save)
    else:
        with _holding(job, "power", rack_name, targets, refused, {"action": action, "forced": force}) as done:
            outcomes = _run(job, f"power {action}", tasks, save)
            done(outcomes)
    rows = [
        {
            "name": o.name,
            "ok": o.ok,
            "error": error_of(o),
            **(
                o.value.record()
                if o.value
                else {"action": action, "before": None, "after": None, "steps": []}
            ),
        }
        for o in outcomes
    ]
    return RackResult(rack_name, rows, enrolled, warnings=plain_http_warnings(targets))


# -- boot ---------------------------------------------------------------------------------------


def boot_rack(
    job: RackJob,
    what: str,
    options: PowerOptions,
    *,
    iso: str | None = None,
    reset: bool = False,
    mode: str | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> RackResult:
    """One-time boot from PXE (``pxe``) or from ``iso`` in the virtual CD (``cd``), restarting
    the node when ``reset``; ``eject`` removes the virtual media (no gate)."""
    store, transport = job.store, job.transport
    rack_name, targets, enrolled = _targets(job)
    by_name = {t.name: t for t in targets}
    # Ejecting is allowed in any state, but not under another run (an install reading the media).
    refused = _refusals(job, Step.BOOT if what != "eject" else None, targets, force)
    if dry_run:
        label = f"boot {what}" + (" and restart" if reset and what != "eject" else "")
        return RackResult(rack_name, _plan(label, targets, refused), enrolled, dry_run=True)
    modes = {t.name: mode or t.boot_mode for t in targets}

    def work_for(target: Target) -> Callable[[RedfishClient], Any]:
        def work(client: RedfishClient) -> dict[str, Any]:
            bctx = locate(client)
            if what == "eject":
                return {"media": vmedia.eject(bctx).record()}
            out: dict[str, Any] = {}
            if what == "cd":
                out["media"] = vmedia.insert(bctx, iso or "").record()
            out["boot"] = set_boot_once(bctx, "Pxe" if what == "pxe" else "Cd", modes[target.name]).record()
            if reset:
                out["power"] = PowerControl(bctx, options).restart().record()
            return out

        return work

    tasks = [
        _refused_task(t, refused[t.name]) if t.name in refused else _task(t, work_for(t), transport)
        for t in targets
    ]

    def save(outcome: Outcome[Any]) -> None:
        if outcome.name in refused:
            return
        details = {**tls_details(transport, by_name[outcome.name]), "forced": force, "iso": iso}
        for why in ((outcome.value or {}).get("boot") or {}).get("prechecks_skipped", []):
            store.record_event(
                outcome.name, "precheck-skipped", f"boot {what}: {why}", details={**details, "why": why}
            )
        _record_outcome(store, outcome, "boot", f"boot {what}", details, boot_summary, dict)

    params = {"what": what, "reset": reset, "forced": force}
    with _holding(job, "boot", rack_name, targets, refused, params) as done:
        outcomes = _run(job, f"boot {what}", tasks, save)
        done(outcomes)
    rows = [{"name": o.name, "ok": o.ok, "error": error_of(o), **(o.value or {})} for o in outcomes]
    return RackResult(rack_name, rows, enrolled, warnings=plain_http_warnings(targets))


def boot_summary(r: dict[str, Any]) -> str:
    """One line for a node's boot row: media, boot override, power."""
    parts = []
    if "media" in r:
        m = r["media"]
        parts.append(f"media inserted: {m['image']}" if m["inserted"] else "media ejected")
    if "boot" in r:
        b = r["boot"]
        parts.append(
            f"{b['target']} {b['enabled']} ({b['mode']}) verified" + (", pending" if b["pending"] else "")
        )
    if "power" in r:
        parts.append(f"power {r['power']['before']} -> {r['power']['after']}")
    return "; ".join(parts)


# -- bmc jobs -----------------------------------------------------------------------------------


def bmc_jobs(job: RackJob, *, clear: bool = False) -> RackResult:
    """Each BMC's job queue and readiness; the queue is cleared (an event per node) only when
    ``clear``."""
    store, transport = job.store, job.transport
    rack_name, targets, enrolled = _targets(job)
    by_name = {t.name: t for t in targets}

    def work(client: RedfishClient) -> dict[str, Any]:
        bctx = locate(client)
        out: dict[str, Any] = {"vendor": bctx.vendor.name}
        if clear:
            out["cleared"] = bctx.vendor.clear_jobs(bctx)
        out["jobs"] = bctx.vendor.jobs(bctx)
        try:
            out["readiness"] = bctx.vendor.readiness(bctx)
        except NotSupported as exc:  # the queue was read; readiness is shown as not read, not a failure
            out["readiness"] = {"ready": None, "not_read": exc.message}
        return out

    def save(outcome: Outcome[Any]) -> None:
        if clear and outcome.ok:
            store.record_event(
                outcome.name,
                "jobs-cleared",
                f"job queue cleared: {outcome.value['cleared']}",
                details=tls_details(transport, by_name[outcome.name]),
            )

    outcomes = _run(job, "bmc jobs", [_task(t, work, transport) for t in targets], save)
    rows = [{"name": o.name, "ok": o.ok, "error": error_of(o), **(o.value or {})} for o in outcomes]
    return RackResult(rack_name, rows, enrolled, warnings=plain_http_warnings(targets))

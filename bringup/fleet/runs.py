"""The run ledger: a command that works on nodes opens a run, claims the nodes, keeps a heartbeat,
and records how it ended, whatever happens (docs/design.md, idea 2).

- **Claims.** A run claims all its nodes in the transaction that creates it: one ``claims`` row
  per node, the node id its primary key, so a second run's insert fails on SQLite and on
  PostgreSQL alike and that run refuses (``NodesBusy``, naming the run that holds them), or
  with ``wait`` queues behind it. A claim dies with its run, however the run ends.
- **Endings.** ``run_ledger`` records the ending in a ``finally``: the caller's outcome (done,
  failed...), ``error`` with the exception's one line, or ``interrupted`` with the signal
  (SIGINT, SIGTERM and SIGHUP are turned into an exception in the main thread while the run is
  open, so the ``finally`` runs; the previous handlers come back after).
- **Abandoned runs.** kill -9, a power cut or a lost controller reach no ``finally``. A running
  run whose controller is gone (on this host: its pid no longer exists; on another host: its
  heartbeat is older than a grace period) is marked ``abandoned``, with an event on each node
  it held, by the next command that looks (a run starting, ``burnin golden``, ``burnin runs``).
- ``abort_run`` ends one on purpose (``burnin runs abort N --reason ...``); a controller still
  alive notices at its next heartbeat and stops.

``bringup/fleet/run_list.py`` lists runs as ``burnin runs`` shows them.
"""

from __future__ import annotations

import _thread
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import FrameType
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bringup.core.errors import UserError
from bringup.fleet.evidence import run_output
from bringup.fleet.models import Claim, Event, Node, Run, utcnow
from bringup.fleet.store import FleetStore, StoreError, default_actor

log = logging.getLogger(__name__)

RUNNING = "running"
# What a caller may say of its own run; interrupted, abandoned and aborted are the ledger's.
OUTCOMES = ("done", "ok", "partial", "failed", "error")
HEARTBEAT_ENV = "BRINGUP_HEARTBEAT_S"
DEFAULT_HEARTBEAT_S = 10.0
GRACE_BEATS = 3  # a heartbeat this many intervals old means the controller is gone
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_WAIT_POLL_S = 2.0
_CLAIM_CHUNK = 1000  # rows per INSERT: 3 parameters each, well under SQLite's 32766


class NodesBusy(UserError):
    """Some of a run's nodes are held by another run that is still alive."""

    def __init__(self, kind: str, holders: Sequence[Holder], now: datetime):
        self.holders = list(holders)
        held = "; ".join(h.describe(now) for h in self.holders)
        first = self.holders[0].run_id if self.holders else "N"
        super().__init__(
            f"cannot start the {kind} run: {held}. Wait for it (or pass --wait), or end it: "
            f"burnin runs abort {first} --reason '...'"
        )


class RunInterrupted(KeyboardInterrupt):
    """A stop signal arrived while a run was open (a KeyboardInterrupt, so commands stop as on ^C)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class Holder:
    """A running run and the nodes it holds (of those asked about)."""

    run_id: int
    kind: str
    rack: str | None
    host: str | None
    pid: int | None
    started_at: datetime
    heartbeat_at: datetime | None
    nodes: tuple[str, ...] = ()
    gone: str | None = None  # why its controller is gone (when read), None while it may be alive

    def what(self, now: datetime) -> str:
        """'burnin run 7 (controller h1 pid 4242, started 3 min ago, heartbeat 4 s ago)'."""
        where = f"controller {self.host or '?'} pid {self.pid if self.pid is not None else '?'}"
        beat = f", heartbeat {_ago(now, self.heartbeat_at)} ago" if self.heartbeat_at else ""
        return f"{self.kind} run {self.run_id} ({where}, started {_ago(now, self.started_at)} ago{beat})"

    def describe(self, now: datetime) -> str:
        verb = "is" if len(self.nodes) == 1 else "are"
        return f"{_some(self.nodes)} {verb} held by {self.what(now)}"


# ---- pure: is a run's controller gone? --------------------------------------------------------


def heartbeat_interval() -> float:
    """The heartbeat interval in seconds: ``$BRINGUP_HEARTBEAT_S``, else 10."""
    raw = os.environ.get(HEARTBEAT_ENV)
    if not raw:
        return DEFAULT_HEARTBEAT_S
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{HEARTBEAT_ENV}={raw!r}: expected a number of seconds") from None
    if not 0.05 <= value <= 3600:
        raise UserError(f"{HEARTBEAT_ENV}={raw!r}: expected between 0.05 and 3600 seconds")
    return value


def this_host() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a zombie is gone: it runs nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat field 22), None where
    that cannot be read: with its pid it names one process, even after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def gone_reason(
    run: Run,
    now: datetime,
    host: str,
    alive: Callable[[int], bool] = pid_alive,
    started: Callable[[int], int | None] = process_start,
) -> str | None:
    """Why a running run's controller is gone, or None while it may be alive (or cannot be told:
    a run recorded without controller, by an older bringup)."""
    if run.controller_host is None or run.controller_pid is None:
        return None
    if run.controller_host == host:
        pid = run.controller_pid
        if not alive(pid):
            return f"its controller (pid {pid} on {host}) is gone"
        recorded = (run.params or {}).get("controller_started")
        now_started = started(pid) if recorded is not None else None
        if now_started is not None and now_started != recorded:
            return f"its controller (pid {pid} on {host}) is gone: that pid is another process now"
        return None
    beat = run.heartbeat_at or run.started_at
    interval = float((run.params or {}).get("heartbeat_s") or DEFAULT_HEARTBEAT_S)
    grace = GRACE_BEATS * interval
    if (now - beat).total_seconds() > grace:
        return (
            f"its controller ({run.controller_host} pid {run.controller_pid}) stopped renewing its "
            f"heartbeat {_ago(now, beat)} ago (grace {grace:g} s)"
        )
    return None


# ---- the store edge -------------------------------------------------------------------------


def _node_ids(s: Session, names: Sequence[str]) -> dict[str, int]:
    rows = s.execute(select(Node.name, Node.id).where(Node.name.in_(list(names)))).all()
    ids = {name: node_id for name, node_id in rows}
    missing = [n for n in names if n not in ids]
    if missing:
        raise StoreError(f"no node {', '.join(missing)} in the fleet store; a run claims only enrolled nodes")
    return ids


def holders(store: FleetStore, names: Sequence[str] | None = None) -> list[Holder]:
    """The running runs that hold any of ``names`` (every claim when None), oldest first."""
    stmt = (
        select(Claim, Run, Node.name).join(Run, Claim.run_id == Run.id).join(Node, Claim.node_id == Node.id)
    )
    if names is not None:
        stmt = stmt.where(Node.name.in_(list(names)))
    by_run: dict[int, tuple[Run, list[str]]] = {}
    with store.reading() as s:
        for _claim, run, name in s.execute(stmt.order_by(Run.id, Node.name)).all():
            by_run.setdefault(run.id, (run, []))[1].append(name)
    return [_holder(run, nodes) for run, nodes in by_run.values()]


def _holder(run: Run, nodes: Sequence[str]) -> Holder:
    return Holder(
        run.id,
        run.kind,
        run.rack,
        run.controller_host,
        run.controller_pid,
        run.started_at,
        run.heartbeat_at,
        tuple(nodes),
        gone_reason(run, utcnow(), this_host()),
    )


def live_holders(store: FleetStore, names: Sequence[str]) -> dict[str, Holder]:
    """node name -> the run holding it whose controller may still be alive (a run found gone
    does not hold its nodes any more, even before ``sweep_abandoned`` records it)."""
    return {n: h for h in holders(store, names) if h.gone is None for n in h.nodes}


def sweep_abandoned(store: FleetStore, now: datetime | None = None, actor: str | None = None) -> list[Run]:
    """Mark every running run whose controller is gone ``abandoned``: its end reason, an event on
    each node it held, its claims released. Returns the runs marked."""
    now = now or utcnow()
    host = this_host()
    with store.reading() as s:
        candidates = [
            r.id
            for r in s.execute(select(Run).where(Run.status == RUNNING)).scalars()
            if gone_reason(r, now, host)
        ]
        # A claim outliving its run (ended by an older bringup's finish_run) holds nothing.
        orphaned = s.execute(
            select(Claim.run_id).join(Run, Claim.run_id == Run.id).where(Run.status != RUNNING).limit(1)
        ).first()
    if orphaned is not None:
        with store.session() as s:
            ended = select(Run.id).where(Run.status != RUNNING).scalar_subquery()
            s.execute(delete(Claim).where(Claim.run_id.in_(ended)))
    marked = []
    for run_id in candidates:
        with store.session() as s:
            run = s.get(Run, run_id, with_for_update=True, populate_existing=True)
            why = gone_reason(run, now, host) if run is not None and run.status == RUNNING else None
            if run is None or why is None:  # it ended, or beat, meanwhile
                continue
            _end(s, run, "abandoned", why, actor or default_actor(), event_kind="run-abandoned")
            marked.append(run)
        log.warning("%s run %s marked abandoned: %s", run.kind, run.id, why)
    return marked


def _end(
    s: Session, run: Run, status: str, reason: str | None, actor: str, event_kind: str | None = None
) -> None:
    """End ``run`` inside ``s``: status, reason, time; its claims released; with ``event_kind``,
    an event on each node it held."""
    run.status, run.end_reason, run.finished_at = status, reason, utcnow()
    if event_kind is not None:
        held = s.execute(select(Claim.node_id).where(Claim.run_id == run.id)).scalars().all()
        for node_id in held:
            s.add(
                Event(
                    node_id=node_id,
                    run_id=run.id,
                    kind=event_kind,
                    reason=f"{run.kind} run {run.id} {status}: {reason}",
                    actor=actor,
                    details={"run_id": run.id, "status": status},
                )
            )
    s.execute(delete(Claim).where(Claim.run_id == run.id))


def abort_run(store: FleetStore, run_id: int, reason: str, actor: str | None = None) -> Run:
    """End a running run on purpose: ``aborted``, an event on each node it held, claims released."""
    if not reason.strip():
        raise UserError("say why the run is aborted (--reason)")
    actor = actor or default_actor()
    with store.session() as s:
        run = s.get(Run, run_id, with_for_update=True)
        if run is None:
            raise StoreError(f"no run {run_id}")
        if run.status != RUNNING:
            raise UserError(
                f"run {run_id} already ended: {run.status}"
                + (f" ({run.end_reason})" if run.end_reason else "")
            )
        _end(s, run, "aborted", f"aborted by {actor}: {reason.strip()}", actor, event_kind="run-aborted")
        return run


def _open(
    store: FleetStore, kind: str, rack: str | None, names: Sequence[str], params: dict[str, Any], actor: str
) -> Run | list[Holder]:
    """Create the run and its claims in one transaction; the holders instead when a node is taken."""
    try:
        with store.session() as s:
            ids = _node_ids(s, names)
            run = Run(
                kind=kind,
                rack=rack,
                params=params,
                actor=actor,
                status=RUNNING,
                controller_host=this_host(),
                controller_pid=os.getpid(),
                heartbeat_at=utcnow(),
            )
            s.add(run)
            s.flush()
            # Multi-row INSERTs in the run's transaction: a node already claimed fails it, and the
            # run with it. (Not executemany: psycopg's pipeline logs a warning when one fails.)
            rows = [{"node_id": i, "run_id": run.id, "claimed_at": utcnow()} for i in ids.values()]
            for at in range(0, len(rows), _CLAIM_CHUNK):
                s.execute(insert(Claim).values(rows[at : at + _CLAIM_CHUNK]))
            return run
    except IntegrityError:
        taken = holders(store, names)
        return taken


def start_run(
    store: FleetStore,
    kind: str,
    rack: str | None = None,
    *,
    nodes: Sequence[str] = (),
    params: dict[str, Any] | None = None,
    actor: str | None = None,
    wait: timedelta | None = None,
    heartbeat_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Run:
    """Open a run holding ``nodes`` (inventory names). Runs whose controller is gone are marked
    abandoned first; a node another live run holds raises NodesBusy, or with ``wait`` the run
    queues until the nodes are free (NodesBusy when ``wait`` runs out), telling ``on_wait`` what
    it waits for each time that changes."""
    names = list(dict.fromkeys(nodes))
    interval = heartbeat_s if heartbeat_s is not None else heartbeat_interval()
    record = {**(params or {}), "heartbeat_s": interval, "controller_started": process_start(os.getpid())}
    actor = actor or default_actor()
    deadline = clock() + (wait.total_seconds() if wait else 0.0)
    vanished, told = 0, None
    while True:
        sweep_abandoned(store)
        opened = _open(store, kind, rack, names, record, actor)
        if isinstance(opened, Run):
            return opened
        if not opened:  # the holder ended between our insert and our look: try again at once
            vanished += 1
            if vanished > 5:
                raise StoreError(f"cannot claim {_some(names)}: the claims keep changing; try again")
            continue
        if clock() >= deadline:
            raise NodesBusy(kind, opened, utcnow())
        if on_wait is not None and told != [h.run_id for h in opened]:
            told = [h.run_id for h in opened]
            on_wait("; ".join(h.describe(utcnow()) for h in opened))
        sleep(max(0.01, min(_WAIT_POLL_S, deadline - clock())))


def end_run(
    store: FleetStore, run_id: int, status: str, reason: str | None = None, evidence: str | None = None
) -> bool:
    """Record how a run ended and release its claims. False (nothing changed) when the run had
    already been ended elsewhere (aborted, or marked abandoned): that ending stands."""
    with store.session() as s:
        run = s.get(Run, run_id, with_for_update=True, populate_existing=True)
        if run is None:
            raise StoreError(f"no run {run_id}")
        if evidence is not None:
            run.evidence = run_output(evidence)  # bounded, like every result's evidence
        if run.status != RUNNING:
            return False
        _end(s, run, status, reason, run.actor)
        return True


class Heartbeat:
    """Renews a run's ``heartbeat_at`` every ``interval`` seconds from a daemon thread. When the run
    turns out to have been ended elsewhere (aborted, or marked abandoned), ``on_ended`` is called
    once with its status and reason."""

    def __init__(self, store: FleetStore, run_id: int, interval: float, on_ended: Callable[[str, str], None]):
        self.store, self.run_id, self.interval, self.on_ended = store, run_id, interval, on_ended
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"run-{run_id}-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=max(5.0, self.interval))

    def renew(self) -> tuple[str, str] | None:
        """One beat: None when renewed, else how the run ended elsewhere (status, reason)."""
        with self.store.session() as s:
            renewed = s.execute(
                update(Run).where(Run.id == self.run_id, Run.status == RUNNING).values(heartbeat_at=utcnow())
            ).rowcount
            if renewed:
                return None
            run = s.get(Run, self.run_id)
            return (run.status, run.end_reason or "") if run else ("gone", "")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                ended = self.renew()
            except Exception as exc:  # noqa: BLE001 - a store hiccup must not kill the run; the next beat retries
                log.warning("run %s: could not renew its heartbeat: %s", self.run_id, exc)
                continue
            if ended is None:
                continue
            if not self._stop.is_set():
                self.on_ended(*ended)
            return


@dataclass
class ActiveRun:
    """The run a ``run_ledger`` block works under. Set ``outcome`` (done, failed...) before the
    block ends, else a block that ends normally is ``done``."""

    id: int
    kind: str
    nodes: tuple[str, ...]
    outcome: str | None = None
    reason: str | None = None
    evidence: str | None = None
    ended_elsewhere: str | None = None  # "aborted: aborted by ...: reason" when someone ended it
    started_at: datetime = field(default_factory=utcnow)

    def finish(self, outcome: str, reason: str | None = None, evidence: str | None = None) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"a run's outcome is one of {', '.join(OUTCOMES)}, not {outcome!r}")
        self.outcome, self.reason = outcome, reason
        if evidence is not None:
            self.evidence = evidence


@contextmanager
def run_ledger(
    store: FleetStore,
    kind: str,
    rack: str | None = None,
    *,
    nodes: Sequence[str] = (),
    params: dict[str, Any] | None = None,
    actor: str | None = None,
    wait: timedelta | None = None,
    heartbeat_s: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[ActiveRun]:
    """``with run_ledger(store, "burnin", rack, nodes=[...], params={...}) as run:`` opens the run
    (claims, heartbeat, stop signals) and records its ending whatever happens in the block."""
    opened = start_run(
        store,
        kind,
        rack,
        nodes=nodes,
        params=params,
        actor=actor,
        wait=wait,
        heartbeat_s=heartbeat_s,
        on_wait=on_wait,
    )
    active = ActiveRun(opened.id, kind, tuple(dict.fromkeys(nodes)), started_at=opened.started_at)
    main = threading.current_thread() is threading.main_thread()
    previous: dict[int, Any] = {}

    def stop(signum: int, _frame: FrameType | None) -> None:
        why = active.ended_elsewhere or signal.Signals(signum).name
        raise RunInterrupted(why)

    def ended(status: str, reason: str) -> None:
        active.ended_elsewhere = f"{status}: {reason}" if reason else status
        if main:  # stop the work: its claims are gone, another run may take the nodes
            _thread.interrupt_main(signal.SIGINT)

    if main:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, stop)
    beat = Heartbeat(store, opened.id, float(opened.params["heartbeat_s"]), ended).start()
    status, reason = "error", "the run ended without a recorded outcome"
    try:
        yield active
        status, reason = active.outcome or "done", active.reason
    except RunInterrupted as exc:
        status, reason = "interrupted", exc.why
        raise
    except KeyboardInterrupt:
        status, reason = "interrupted", "SIGINT"
        raise
    except BaseException as exc:
        status, reason = "error", _one_line(exc)
        raise
    finally:
        if main:  # a second ^C (or the heartbeat's interrupt) while the ending is written must not lose it
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
        try:
            beat.stop()
            end_run(store, opened.id, status, reason, active.evidence)
        except Exception as exc:  # noqa: BLE001 - the run's own error matters more; it will be found abandoned
            log.error("run %s: could not record its ending (%s): %s", opened.id, status, exc)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


# ---- wording -----------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def _ago(now: datetime, then: datetime | None) -> str:
    if then is None:
        return "?"
    return format_duration((now - then).total_seconds())


def format_duration(seconds: float) -> str:
    """'42 s', '5 min', '3 h 10 min', '2 d 4 h'."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def _some(names: Sequence[str], shown: int = 4) -> str:
    if not names:
        return "its nodes"
    head = ", ".join(names[:shown])
    return head if len(names) <= shown else f"{head} and {len(names) - shown} more"

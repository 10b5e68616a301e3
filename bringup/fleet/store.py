"""The fleet store: one SQLAlchemy engine, short transactions, results committed as they arrive.

SQLite (the default, a file) runs in WAL mode with a busy timeout, and every transaction
starts with ``BEGIN IMMEDIATE`` so two writers queue instead of failing half-way through a
read-then-write. On PostgreSQL a transition takes a row lock (``SELECT ... FOR UPDATE``) on
the node. Either way a transition re-reads the state under the lock, so two processes moving
the same node cannot both succeed from the same starting state.
"""

from __future__ import annotations

import getpass
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, or_, select, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from bringup.fleet import evidence, schema
from bringup.fleet.evidence import run_output
from bringup.fleet.lifecycle import State, check_transition, parse_state
from bringup.fleet.models import CheckResult, Event, Node, Run, utcnow
from bringup.fleet.results_write import write_results
from bringup.fleet.store_errors import StoreError, redact_url, store_fault
from burnin.result import Verdict

# The verdict vocabulary is burn-in's (a leaf module bringup may import for this alone).
VERDICTS = tuple(v.value for v in Verdict)


class NodeNotFound(StoreError):
    pass


log = logging.getLogger(__name__)


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "bringup" / "fleet.db"


def resolve_db_url(db: str | None = None) -> str:
    """``--db`` wins, then ``BRINGUP_DB``, then a SQLite file in the user's data directory.

    A value with ``://`` is an SQLAlchemy URL (``postgresql://...``); anything else a file path.
    """
    value = db or os.environ.get("BRINGUP_DB") or str(default_db_path())
    if "://" in value:
        return value
    path = Path(value).expanduser().resolve()
    private_sqlite_file(path)
    return f"sqlite:///{path}"


def private_sqlite_file(path: Path) -> None:
    """Create the SQLite file 0600 and each directory on its way that is missing 0700: the
    store holds the fleet's BMC addresses, serials and history. SQLite gives its -wal and -shm
    files the database file's mode. What exists already keeps its mode (the operator's
    choice: a group that reads reports); a database others may read is warned about."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for d in reversed(missing):
        d.mkdir(mode=0o700, exist_ok=True)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        if os.stat(path).st_mode & 0o007:
            log.warning("fleet store %s is readable by every user (chmod 600 %s)", path, path)


def default_actor() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        user = str(os.getuid())
    return f"{user}@{os.uname().nodename}"


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event below decide how transactions start.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=30000")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Writers take the write lock up front; readers never wait for writers in WAL mode.
        readonly = conn.get_execution_options().get("bringup_readonly", False)
        conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")


class FleetStore:
    def __init__(self, url: str):
        self.url = url
        try:
            if url.startswith("sqlite"):
                database = make_url(url).database
                if database and database != ":memory:" and not database.startswith("file:"):
                    private_sqlite_file(Path(database).expanduser().resolve())
                self.engine = create_engine(url, connect_args={"timeout": 30})
                _configure_sqlite(self.engine)
            else:
                self.engine = create_engine(url, pool_pre_ping=True)
            self._sessions = sessionmaker(self.engine, expire_on_commit=False)
            self._readers = sessionmaker(
                self.engine.execution_options(bringup_readonly=True), expire_on_commit=False
            )
            self._upgrade()
        except DBAPIError as exc:
            fault = store_fault(url, exc, opening=True)
            if fault is None:
                raise
            raise fault from None

    @classmethod
    def open(cls, db: str | None = None) -> FleetStore:
        return cls(resolve_db_url(db))

    def close(self) -> None:
        self.engine.dispose()

    # -- schema ---------------------------------------------------------------------------

    def _upgrade(self) -> None:
        """Bring the schema to this bringup's head revision (bringup/fleet/schema.py)."""
        readonly = self.engine.execution_options(bringup_readonly=True)
        with readonly.connect() as conn:
            if schema.current_revision(conn) == schema.head():
                return
        sqlite = self.engine.dialect.name == "sqlite"
        with self.engine.connect() as conn:
            if sqlite:
                # Outside any transaction (the pragma is a no-op inside one): batch mode copies a
                # table and drops the old one, which must not cascade into its children.
                conn.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")
            try:
                with conn.begin():
                    if conn.dialect.name == "postgresql":
                        # Serialise concurrent first opens of one database.
                        conn.execute(text("SELECT pg_advisory_xact_lock(7466125)"))
                    started = schema.upgrade(conn, redact_url(self.url))
                    if sqlite and conn.exec_driver_sql("PRAGMA foreign_key_check").first() is not None:
                        raise StoreError(
                            "the schema upgrade left rows whose parent is missing; nothing changed"
                        )
                if started is not None:
                    log.info(
                        "fleet store %s upgraded from %s to %s", redact_url(self.url), started, schema.head()
                    )
            finally:
                if sqlite:
                    conn.connection.driver_connection.execute("PRAGMA foreign_keys=ON")

    def schema_revision(self) -> str | None:
        with self.engine.execution_options(bringup_readonly=True).connect() as conn:
            return schema.current_revision(conn)

    # -- sessions -------------------------------------------------------------------------

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One short write transaction: committed on success, rolled back on error."""
        try:
            with self._sessions() as session, session.begin():
                yield session
        except DBAPIError as exc:
            self._raise_fault(exc)

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """One short read-only transaction (on SQLite it does not queue behind writers)."""
        try:
            with self._readers() as session, session.begin():
                yield session
        except DBAPIError as exc:
            self._raise_fault(exc)

    def _raise_fault(self, exc: DBAPIError) -> None:
        """Raise the user's error for ``exc`` when the store's state explains it, else ``exc``."""
        fault = store_fault(self.url, exc)
        if fault is None:
            raise exc
        raise fault from exc

    @staticmethod
    def _find(session: Session, key: str, lock: bool = False) -> Node:
        stmt = select(Node).where(or_(Node.name == key, Node.serial == key))
        if lock:
            stmt = stmt.with_for_update()
        node = session.execute(stmt).scalars().first()
        if node is None:
            raise NodeNotFound(f"no node {key!r} in the fleet store (enrolled by inventory name or serial)")
        return node

    # -- nodes ----------------------------------------------------------------------------

    def enroll(
        self,
        name: str,
        rack: str,
        profile: str,
        *,
        bmc_address: str | None = None,
        bmc_vendor: str | None = None,
        rack_unit: int | None = None,
        actor: str | None = None,
    ) -> tuple[Node, bool]:
        """Add a node from the inventory, or refresh its inventory fields. Returns (node, created)."""
        with self.session() as s:
            node = s.execute(select(Node).where(Node.name == name).with_for_update()).scalars().first()
            created = node is None
            if node is None:
                node = Node(name=name, state=State.ENROLLED.value, macs=[], hardware={})
                s.add(node)
            node.rack, node.profile = rack, profile
            node.bmc_address, node.bmc_vendor, node.rack_unit = bmc_address, bmc_vendor, rack_unit
            s.flush()
            if created:
                s.add(
                    Event(
                        node_id=node.id,
                        kind="transition",
                        from_state=None,
                        to_state=State.ENROLLED.value,
                        reason=f"enrolled from inventory of rack {rack}",
                        actor=actor or default_actor(),
                        details={},
                    )
                )
            return node, created

    def get_node(self, key: str) -> Node:
        with self.reading() as s:
            return self._find(s, key)

    def list_nodes(self, rack: str | None = None, state: str | State | None = None) -> list[Node]:
        stmt = select(Node).order_by(Node.rack, Node.rack_unit, Node.name)
        if rack:
            stmt = stmt.where(Node.rack == rack)
        if state:
            stmt = stmt.where(Node.state == parse_state(state).value)
        with self.reading() as s:
            return list(s.execute(stmt).scalars())

    def update_node(self, key: str, **fields: Any) -> Node:
        """Set plain fields (serial, hostname, ip, macs, hardware); never the state."""
        if "state" in fields:
            raise StoreError("the state changes only through transition()")
        with self.session() as s:
            node = self._find(s, key, lock=True)
            for name, value in fields.items():
                if not hasattr(Node, name):
                    raise StoreError(f"nodes have no field {name!r}")
                setattr(node, name, value)
            return node

    def transition(
        self,
        key: str,
        target: str | State,
        reason: str,
        *,
        actor: str | None = None,
        run_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> Event:
        """Move a node to ``target`` under a row lock, recording the event; illegal moves raise."""
        target = parse_state(target)
        with self.session() as s:
            node = self._find(s, key, lock=True)
            current = parse_state(node.state)
            check_transition(node.key, current, target)
            node.state = target.value
            ev = Event(
                node_id=node.id,
                run_id=run_id,
                kind="transition",
                from_state=current.value,
                to_state=target.value,
                reason=reason,
                actor=actor or default_actor(),
                details=details or {},
            )
            s.add(ev)
            return ev

    def record_event(
        self,
        key: str,
        kind: str,
        reason: str,
        *,
        actor: str | None = None,
        run_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> Event:
        if kind == "transition":
            raise StoreError("transitions are recorded by transition()")
        with self.session() as s:
            node = self._find(s, key)
            ev = Event(
                node_id=node.id,
                run_id=run_id,
                kind=kind,
                reason=reason,
                actor=actor or default_actor(),
                details=details or {},
            )
            s.add(ev)
            return ev

    def history(self, key: str) -> list[Event]:
        with self.reading() as s:
            node = self._find(s, key)
            return list(s.execute(select(Event).where(Event.node_id == node.id).order_by(Event.id)).scalars())

    # -- runs and results -----------------------------------------------------------------

    def start_run(
        self,
        kind: str,
        rack: str | None = None,
        params: dict[str, Any] | None = None,
        actor: str | None = None,
    ) -> Run:
        with self.session() as s:
            run = Run(
                kind=kind, rack=rack, params=params or {}, actor=actor or default_actor(), status="running"
            )
            s.add(run)
            s.flush()
            return run

    def finish_run(self, run_id: int, status: str, evidence: str | None = None) -> Run:
        with self.session() as s:
            run = s.get(Run, run_id, with_for_update=True)
            if run is None:
                raise StoreError(f"no run {run_id}")
            run.status, run.finished_at = status, utcnow()
            if evidence is not None:
                run.evidence = run_output(evidence)  # bounded, like a result's
            return run

    def get_run(self, run_id: int) -> Run:
        with self.reading() as s:
            run = s.get(Run, run_id)
            if run is None:
                raise StoreError(f"no run {run_id}")
            return run

    def add_result(
        self,
        key: str,
        stage: str,
        check: str,
        verdict: str,
        *,
        run_id: int | None = None,
        metrics: dict[str, Any] | None = None,
        findings: Sequence[dict[str, Any]] = (),
        evidence: str | None = None,
        time: datetime | None = None,
    ) -> CheckResult:
        """Commit one check result at once, so a crash later in the run loses nothing."""
        row = {
            "stage": stage,
            "check": check,
            "verdict": verdict,
            "metrics": metrics,
            "findings": findings,
            "evidence": evidence,
            "time": time,
        }
        return self.add_results(key, [row], run_id=run_id)[0]

    def add_results(
        self, key: str, rows: Sequence[dict[str, Any]], *, run_id: int | None = None
    ) -> list[CheckResult]:
        """Commit the results of one node's stage together (one transaction, all or none).

        Each row: stage, check, verdict, and optionally metrics, findings, evidence, time.
        """
        return self._add_results([(key, rows)], run_id, as_objects=True)

    def add_results_many(
        self, batches: Sequence[tuple[str, Sequence[dict[str, Any]]]], *, run_id: int | None = None
    ) -> None:
        """``add_results`` for several nodes in one transaction (all or none): what a fan-out has
        in at one moment is one write, its nodes and evidence found by one query each, its rows
        one INSERT (bringup.fleet.results_write)."""
        self._add_results(batches, run_id, as_objects=False)

    def _add_results(
        self, batches: Sequence[tuple[str, Sequence[dict[str, Any]]]], run_id: int | None, as_objects: bool
    ) -> list[CheckResult]:
        for row in (row for _, rows in batches for row in rows):
            if row["verdict"] not in VERDICTS:
                raise StoreError(f"verdict must be one of {', '.join(VERDICTS)}, not {row['verdict']!r}")
        with self.session() as s:
            keys = sorted({key for key, _ in batches})
            stmt = select(Node).where(or_(Node.name.in_(keys), Node.serial.in_(keys)))
            found = list(s.execute(stmt).scalars())
            nodes = {n.serial: n for n in found if n.serial} | {n.name: n for n in found}
            nodes.update((key, self._find(s, key)) for key in keys if key not in nodes)  # NodeNotFound
            saved = write_results(s, [(nodes[key].id, rows) for key, rows in batches], run_id, as_objects)
            for key, rows in batches:
                _leave_golden_on_fail(s, nodes[key], rows, run_id)
            return saved

    def latest_results(self, key: str) -> list[CheckResult]:
        """The newest result of every (stage, check) of a node, without its evidence (one
        indexed query: ix_results_latest)."""
        with self.reading() as s:
            node = self._find(s, key)
            return evidence.latest(s, [node.id]).get(node.id, [])

    def latest_results_of_rack(self, rack: str) -> dict[str, list[CheckResult]]:
        """Node name -> the newest result of each of its (stage, check), for every node of the
        rack, in one query (golden selection, reports); no evidence is read."""
        with self.reading() as s:
            nodes = dict(s.execute(select(Node.id, Node.name).where(Node.rack == rack)).all())
            found = evidence.latest(s, list(nodes))
            return {name: found.get(node_id, []) for node_id, name in nodes.items()}

    def evidence(self, result: CheckResult) -> str | None:
        """The raw output kept with ``result``, read now; a pruned one is a line saying so;
        None when it kept none."""
        return self.evidence_of([result]).get(result.id)

    def evidence_of(self, results: Sequence[CheckResult]) -> dict[int, str]:
        """Result id -> its evidence text (or the line saying it was pruned), read in one go."""
        with self.reading() as s:
            texts = evidence.texts(s, [r.evidence_id for r in results if r.evidence_id is not None])
        out = {r.id: texts[r.evidence_id] for r in results if r.evidence_id in texts}
        pruned = {r.id: evidence.pruned_note(r.evidence_pruned_at) for r in results if r.evidence_pruned_at}
        out.update(pruned)
        return out

    # -- discovery (added by the Redfish layer) -------------------------------------------

    def record_discovery(
        self,
        name: str,
        serial: str,
        *,
        macs: Sequence[str],
        hardware: dict[str, Any],
        owned_keys: Sequence[str] = (),
        accept_new_serial: bool = False,
        actor: str | None = None,
        run_id: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> str:
        """Save what a BMC said about node ``name`` (its inventory name), in one transaction.

        ``owned_keys`` of ``Node.hardware`` are replaced as a whole (a section that could not be
        read this time disappears rather than going stale); other keys are kept. Returns what
        happened: ``discovered`` (enrolled -> discovered), ``refreshed``, ``rekeyed`` (a new serial,
        accepted), or, with nothing written but a flag (``hardware["serial_flag"]``) and an event,
        ``serial-changed`` (a swapped board: never re-keyed silently) or ``serial-conflict`` (the
        serial belongs to another node: BMC addresses swapped in the inventory?).
        """
        actor = actor or default_actor()
        info = {**(details or {}), "serial": serial}
        with self.session() as s:
            node = s.execute(select(Node).where(Node.name == name).with_for_update()).scalars().first()
            if node is None:
                raise NodeNotFound(f"no node {name!r} in the fleet store (enroll the rack first)")

            def event(
                kind: str,
                reason: str,
                from_state: str | None = None,
                to_state: str | None = None,
                **extra: Any,
            ) -> None:
                s.add(
                    Event(
                        node_id=node.id,
                        run_id=run_id,
                        kind=kind,
                        from_state=from_state,
                        to_state=to_state,
                        reason=reason,
                        actor=actor,
                        details={**info, **extra},
                    )
                )

            at = utcnow().isoformat(timespec="seconds")
            other = s.execute(select(Node).where(Node.serial == serial, Node.name != name)).scalars().first()
            if other is not None:
                flag = {
                    "kind": "conflict",
                    "recorded": node.serial,
                    "reported": serial,
                    "other": other.name,
                    "at": at,
                }
                node.hardware = {**(node.hardware or {}), "serial_flag": flag}
                event(
                    "serial-conflict",
                    f"the BMC reports serial {serial}, which belongs to node {other.name}: are BMC addresses "
                    "swapped in the inventory? Nothing recorded",
                )
                return "serial-conflict"
            if node.serial and node.serial != serial and not accept_new_serial:
                flag = {"kind": "changed", "recorded": node.serial, "reported": serial, "at": at}
                node.hardware = {**(node.hardware or {}), "serial_flag": flag}
                event(
                    "serial-changed",
                    f"serial changed from {node.serial} to {serial} (board swapped?); not re-keyed: check the "
                    "node, then discover it again with --accept-new-serial",
                    previous_serial=node.serial,
                )
                return "serial-changed"
            old_serial = node.serial
            kept = {
                k: v for k, v in (node.hardware or {}).items() if k not in owned_keys and k != "serial_flag"
            }
            node.hardware = {**kept, **hardware}
            node.serial, node.macs = serial, list(macs)
            outcome = None
            if old_serial and old_serial != serial:
                outcome = "rekeyed"
                event(
                    "serial-accepted",
                    f"serial changed from {old_serial} to {serial}: accepted",
                    previous_serial=old_serial,
                )
            current = parse_state(node.state)
            if current is State.ENROLLED:
                check_transition(node.key, current, State.DISCOVERED)
                node.state = State.DISCOVERED.value
                event(
                    "transition",
                    f"discovered through its BMC (serial {serial})",
                    from_state=current.value,
                    to_state=State.DISCOVERED.value,
                )
                return outcome or "discovered"
            event("discovery", f"discovery refreshed (serial {serial})")
            return outcome or "refreshed"


def _leave_golden_on_fail(s: Session, node: Node, rows: Sequence[dict[str, Any]], run_id: int | None) -> None:
    """A golden node whose new result is FAIL leaves golden now, in the results' transaction, with
    the finding as the reason: a trainer must not get it from the next export. (A node in burn-in
    is failed by its run, with the stage's findings.)"""
    failed = [r for r in rows if r["verdict"] == Verdict.FAIL.value]
    if not failed or node.state != State.GOLDEN.value:
        return
    stmt = select(Node).where(Node.id == node.id).with_for_update().execution_options(populate_existing=True)
    node = s.execute(stmt).scalar_one()  # re-read under the row lock
    if node.state != State.GOLDEN.value:
        return
    first = failed[0]
    findings = list(first.get("findings") or ())
    finding = next((f for f in findings if f.get("severity") == "critical"), None)
    finding = finding or next(iter(findings), None)
    what = (
        f"{finding.get('message', '')} -> {finding.get('action', '')}" if finding else "no finding recorded"
    )
    check_transition(node.key, State.GOLDEN, State.FAILED)
    node.state = State.FAILED.value
    s.add(
        Event(
            node_id=node.id,
            run_id=run_id,
            kind="transition",
            from_state=State.GOLDEN.value,
            to_state=State.FAILED.value,
            reason=f"left golden: {first['stage']} {first['check']} FAIL: {what}",
            actor=default_actor(),
            details={"stage": first["stage"], "check": first["check"], "findings": findings},
        )
    )

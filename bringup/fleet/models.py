"""Tables of the fleet store (SQLAlchemy 2 declarative models).

A node is enrolled by its inventory name and keyed by its chassis serial once discovery
knows it (docs/design.md, idea 1). Events are the node's history: every lifecycle transition, and
anything else worth a line (a power action, a changed serial). Runs group the work of one
command; check results hold verdict, metrics, findings and the raw evidence, so a result can
be judged again when a threshold changes.

Rows leave the store detached (short sessions), so there are no lazy relationships to trip
over: ask the store for a node's history or results.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, LargeBinary, String, Text, TypeDecorator
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# A schema change is a model change here plus an Alembic revision in bringup/fleet/migrations/.


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC on both engines (SQLite drops the zone; PostgreSQL keeps it)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the fleet store; use UTC-aware times")
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    pass


class Meta(Base):
    __tablename__ = "meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(256))


class Node(Base):
    __tablename__ = "nodes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True, doc="inventory host name")
    serial: Mapped[str | None] = mapped_column(
        String(128), unique=True, doc="chassis serial, once discovered"
    )
    rack: Mapped[str] = mapped_column(String(128), index=True)
    profile: Mapped[str] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(32), index=True)
    bmc_address: Mapped[str | None] = mapped_column(String(256))
    bmc_vendor: Mapped[str | None] = mapped_column(String(32))
    rack_unit: Mapped[int | None] = mapped_column(Integer)
    hostname: Mapped[str | None] = mapped_column(String(256))
    ip: Mapped[str | None] = mapped_column(String(64))
    macs: Mapped[list[str]] = mapped_column(JSON, default=list)
    hardware: Mapped[dict[str, Any]] = mapped_column(
        JSON, default=dict, doc="GPU UUIDs, HCA GUIDs, firmware..."
    )
    ssh_host_keys: Mapped[list[str]] = mapped_column(
        JSON,
        default=list,
        doc="the node's SSH host keys ('<type> <base64>' lines) as its installer reported them; "
        "configure and burn-in connect only to a host that shows one of these",
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    @property
    def key(self) -> str:
        """The node's identity: its serial once known, its inventory name before."""
        return self.serial or self.name


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), doc="discover, provision, configure, burnin, ...")
    rack: Mapped[str | None] = mapped_column(String(128))
    actor: Mapped[str] = mapped_column(String(128))
    status: Mapped[str] = mapped_column(
        String(32),
        default="running",
        index=True,
        doc="running, then how it ended: done, failed, error, interrupted, abandoned, aborted",
    )
    end_reason: Mapped[str | None] = mapped_column(
        Text, doc="why it ended that way: the signal, the exception, who aborted it, the controller gone"
    )
    params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    evidence: Mapped[str | None] = mapped_column(Text, doc="run-level output (e.g. Ansible's)")
    controller_host: Mapped[str | None] = mapped_column(String(256), doc="the host the run's process runs on")
    controller_pid: Mapped[int | None] = mapped_column(Integer, doc="the run's process id on that host")
    heartbeat_at: Mapped[datetime | None] = mapped_column(
        UTCDateTime, doc="renewed while the run is alive; a stale one marks the run abandoned"
    )
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Claim(Base):
    """A node held by a running run: one row per node, so a second claim fails atomically
    (the primary key) on SQLite and PostgreSQL alike. A claim dies with its run."""

    __tablename__ = "claims"

    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    claimed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Event(Base):
    __tablename__ = "events"
    # A rack's newest transition (and newest to golden) per node is an index-only range scan
    # (bringup/fleet/reads.py); node_id leads, so it serves a node's history as well.
    __table_args__ = (Index("ix_events_node_kind", "node_id", "kind", "to_state", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    time: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    kind: Mapped[str] = mapped_column(String(32), doc="'transition' or another event kind")
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str | None] = mapped_column(String(32))
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(128))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class EvidenceBlob(Base):
    """One distinct tool output, compressed, stored once however many results point at it
    (bringup/fleet/evidence.py)."""

    __tablename__ = "evidence_blobs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True, doc="of the text as stored")
    size: Mapped[int] = mapped_column(Integer, doc="bytes of the text (UTF-8), before compression")
    codec: Mapped[str] = mapped_column(String(16), doc="how data is compressed: zlib")
    data: Mapped[bytes] = mapped_column(LargeBinary)


class CheckResult(Base):
    __tablename__ = "check_results"
    # The newest result per (node, stage, check) is max(id) of an index range: one index-only
    # query per rack (latest results, golden selection).
    __table_args__ = (Index("ix_results_latest", "node_id", "stage", "check", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"), index=True)
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"))
    stage: Mapped[str] = mapped_column(String(32))
    check: Mapped[str] = mapped_column(String(64))
    verdict: Mapped[str] = mapped_column(String(16))
    metrics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    findings: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    # The raw tool output, kept to judge again: a blob shared by every result with the same
    # output, read only when asked (FleetStore.evidence); never loaded with the result.
    evidence_id: Mapped[int | None] = mapped_column(ForeignKey("evidence_blobs.id"), index=True)
    evidence_pruned_at: Mapped[datetime | None] = mapped_column(
        UTCDateTime, doc="when `bringup store prune` dropped its evidence (verdict and findings kept)"
    )
    time: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def as_dict(self) -> dict[str, Any]:
        """The result as the commands' --json shows it (without the raw evidence)."""
        return {
            "stage": self.stage,
            "check": self.check,
            "verdict": self.verdict,
            "time": self.time.isoformat(),
            "run": self.run_id,
            "metrics": self.metrics,
            "findings": self.findings,
        }


class Breaker(Base):
    """The circuit breaker of one check in one partition (docs/in-service.md, "The circuit
    breaker"): its row is what a drain locks, so two nodes deciding at once see each other."""

    __tablename__ = "breakers"

    partition: Mapped[str] = mapped_column(String(128), primary_key=True)
    check: Mapped[str] = mapped_column(String(64), primary_key=True)
    tripped_at: Mapped[datetime | None] = mapped_column(UTCDateTime, doc="set while tripped: drains held")
    reset_at: Mapped[datetime | None] = mapped_column(UTCDateTime, doc="drains before it no longer count")
    reset_by: Mapped[str | None] = mapped_column(String(128))


class BreakerDrain(Base):
    """One node's drain for a check, allowed or held by its breaker."""

    __tablename__ = "breaker_drains"
    __table_args__ = (Index("ix_breaker_drains_window", "partition", "check", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    partition: Mapped[str] = mapped_column(String(128))
    check: Mapped[str] = mapped_column(String(64))
    node: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    outcome: Mapped[str] = mapped_column(String(16), doc="drained or held")

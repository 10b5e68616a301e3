"""Evidence: the raw tool output kept with a check result, bounded, compressed, stored once.

The pure half: ``cap`` keeps an output's head and tail (tools print their headers first and
their verdicts last) and marks the cut in the text with how much was cut; ``digest`` names a
text by the sha256 of what is stored; ``compress`` and ``decompress`` pack it (zlib: at the
default level it packs `nvidia-smi -q` 19:1 in half a millisecond; lzma packs a quarter smaller
but 20 times slower, benchmarks/store.py prints both).

The store half: ``put`` writes a text into the ``evidence_blobs`` table once per distinct
content (the `nvidia-smi -q` that four checks read is one blob) and returns its id;
``texts`` reads blobs back by id, only when asked.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bringup.core.cut import MIB, cut_marker
from bringup.core.errors import BadInput
from bringup.fleet.models import CheckResult, EvidenceBlob

DEFAULT_CAP = 4 * MIB  # bytes of one output kept as evidence (half from its head, half from its tail)
CAP_ENV = "BRINGUP_EVIDENCE_CAP_MB"  # sets the cap for every command (a number of MiB)
CODEC = "zlib"
_LEVEL = 6


@dataclass(frozen=True)
class Capped:
    text: str
    total: int  # bytes (UTF-8) of the whole output
    dropped: int  # bytes cut out of its middle (0: kept whole)


def output_cap() -> int:
    """The cap on one output in bytes: ``BRINGUP_EVIDENCE_CAP_MB`` when set, else 4 MiB."""
    value = os.environ.get(CAP_ENV, "").strip()
    if not value:
        return DEFAULT_CAP
    try:
        size = float(value)
    except ValueError:
        size = -1.0
    if not 0 < size <= 1024:
        raise BadInput(f"{CAP_ENV}={value!r}: give the cap on one output in MiB, between 0 and 1024")
    return int(size * MIB)


def cap(text: str, limit: int = DEFAULT_CAP) -> Capped:
    """``text`` whole when it fits in ``limit`` bytes of UTF-8, else its head and tail (half the
    limit each) around a line that says how much was cut. Never longer than the limit plus
    that line."""
    if limit <= 0:
        raise ValueError(f"an evidence cap must be positive, got {limit}")
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return Capped(text, len(raw), 0)
    head, tail = raw[: limit // 2], raw[len(raw) - (limit - limit // 2) :]
    dropped = len(raw) - len(head) - len(tail)
    # A cut through a multi-byte character is replaced, never an error.
    joined = head.decode("utf-8", "replace") + cut_marker(len(raw), dropped) + tail.decode("utf-8", "replace")
    return Capped(joined, len(raw), dropped)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def compress(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8", "surrogatepass"), _LEVEL)


def decompress(data: bytes, codec: str = CODEC) -> str:
    if codec != CODEC:
        raise ValueError(f"evidence compressed with {codec!r}, which this bringup cannot read")
    return zlib.decompress(data).decode("utf-8", "surrogatepass")


# ---- the store side (inside a FleetStore session) -------------------------------------------


def put(session: Session, text: str, cache: dict[str, int] | None = None) -> int:
    """The id of the blob holding ``text``: an existing one with the same sha256, else a new one.

    ``cache`` (sha256 -> id) spares a query for a text already put in the same transaction."""
    key = digest(text)
    if cache is not None and key in cache:
        return cache[key]
    found = session.execute(select(EvidenceBlob.id).where(EvidenceBlob.sha256 == key)).scalar()
    if found is None:
        size = len(text.encode("utf-8", "surrogatepass"))
        blob = EvidenceBlob(sha256=key, size=size, codec=CODEC, data=compress(text))
        try:
            with session.begin_nested():  # PostgreSQL: another run may put the same text now
                session.add(blob)
        except IntegrityError:
            found = session.execute(select(EvidenceBlob.id).where(EvidenceBlob.sha256 == key)).scalar_one()
        else:
            found = blob.id
    if cache is not None:
        cache[key] = found
    return found


def put_many(session: Session, texts: Sequence[str], cache: dict[str, int]) -> list[int]:
    """``put`` for many texts at once: the ids of their blobs, in order. One query finds those
    stored already and one INSERT adds the rest (a wave of results is one transaction, not one
    query per output). Where another writer added one of them meanwhile (PostgreSQL), each is
    put on its own. ``cache`` (sha256 -> id) is filled."""
    named: dict[str, str] = {}  # text -> its sha256: an output several checks read is hashed once
    keys = [named[t] if t in named else named.setdefault(t, digest(t)) for t in texts]
    unknown = sorted({k for k in keys if k not in cache})
    for i in range(0, len(unknown), 500):
        chunk = unknown[i : i + 500]
        found = select(EvidenceBlob.sha256, EvidenceBlob.id).where(EvidenceBlob.sha256.in_(chunk))
        cache.update((sha, blob_id) for sha, blob_id in session.execute(found))
    new: dict[str, dict] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in cache and key not in new:
            raw = text.encode("utf-8", "surrogatepass")
            new[key] = {"sha256": key, "size": len(raw), "codec": CODEC, "data": zlib.compress(raw, _LEVEL)}
    if new:
        # One INSERT of plain rows, not ORM objects (bringup.fleet.results_write says why); the
        # rows come back in no promised order, so each names its sha256.
        stmt = insert(EvidenceBlob.__table__).returning(EvidenceBlob.sha256, EvidenceBlob.id)
        try:
            with session.begin_nested():
                cache.update(tuple(row) for row in session.execute(stmt, list(new.values())))
        except IntegrityError:
            for key, text in zip(keys, texts, strict=True):
                if key in new:
                    put(session, text, cache)
    return [cache[k] for k in keys]


def store_text(session: Session, text: str | None, cache: dict[str, int] | None = None) -> int | None:
    """``put`` a result's evidence, capped: the runner caps each stream (stdout, stderr) and
    tells the check first; this is the store's own bound, for any caller: both streams with
    their cut markers fit. None stays None."""
    if text is None:
        return None
    return put(session, cap(text, 2 * output_cap() + 4096).text, cache)


def store_texts(session: Session, texts: Sequence[str | None], cache: dict[str, int]) -> list[int | None]:
    """``store_text`` for many results' evidence at once (``put_many``); None stays None."""
    limit = 2 * output_cap() + 4096
    capped_of: dict[str, str] = {}  # the same text (nvidia-smi -q for five checks) capped once
    capped = [
        capped_of[t] if t in capped_of else capped_of.setdefault(t, cap(t, limit).text)
        for t in texts
        if t is not None
    ]
    ids = iter(put_many(session, capped, cache))
    return [None if t is None else next(ids) for t in texts]


def run_output(text: str) -> str:
    """A run's own output (Ansible's) as the store keeps it: capped like a result's."""
    return cap(text, 2 * output_cap() + 4096).text


def pruned_note(at: datetime) -> str:
    return (
        f"(evidence pruned {at:%Y-%m-%d %H:%M} UTC by `bringup store prune`; "
        "the verdict, metrics and findings are kept)"
    )


def latest(session: Session, node_ids: Sequence[int]) -> dict[int, list[CheckResult]]:
    """Node id -> its newest result per (stage, check), by stage and check: the newest of a
    check is the max(id) of its range of ix_results_latest (node_id, stage, check, id)."""
    out: dict[int, list[CheckResult]] = {}
    ids = list(node_ids)
    for i in range(0, len(ids), 500):
        newest = (
            select(func.max(CheckResult.id))
            .where(CheckResult.node_id.in_(ids[i : i + 500]))
            .group_by(CheckResult.node_id, CheckResult.stage, CheckResult.check)
        )
        rows = session.execute(
            select(CheckResult)
            .where(CheckResult.id.in_(newest))
            .order_by(CheckResult.node_id, CheckResult.stage, CheckResult.check)
        ).scalars()
        for row in rows:
            out.setdefault(row.node_id, []).append(row)
    return out


def texts(session: Session, ids: Iterable[int]) -> dict[int, str]:
    """Blob id -> its text, for the ids asked (one query per 500)."""
    wanted = sorted(set(ids))
    out: dict[int, str] = {}
    for i in range(0, len(wanted), 500):
        rows = session.execute(
            select(EvidenceBlob.id, EvidenceBlob.codec, EvidenceBlob.data).where(
                EvidenceBlob.id.in_(wanted[i : i + 500])
            )
        )
        for blob_id, codec, data in rows:
            out[blob_id] = decompress(data, codec)
    return out

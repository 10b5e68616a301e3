"""Writing a node's past into a real fleet store through its API, dated: the store stamps events
with the time of the call, so each call's new events are then moved to the date they stand for."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select, update

from bringup.fleet.lifecycle import State
from bringup.fleet.models import Event
from bringup.fleet.store import FleetStore
from tests.fleet import walk_to


class PastWriter:
    def __init__(self, store: FleetStore):
        self.store = store
        self.seen = self._last_id()

    def _last_id(self) -> int:
        with self.store.reading() as s:
            return s.execute(select(func.max(Event.id))).scalar() or 0

    def _date(self, at: datetime) -> None:
        """The events written since the last call happened at ``at``."""
        with self.store.session() as s:
            s.execute(update(Event).where(Event.id > self.seen).values(time=at))
        self.seen = self._last_id()

    def golden(self, name: str, rack: str, at: datetime, profile: str = "h100-sxm-8x400g") -> None:
        self.store.enroll(name, rack, profile)
        walk_to(self.store, name, State.GOLDEN)
        self.store.update_node(name, created_at=at)
        self._date(at)

    def fail(
        self,
        name: str,
        at: datetime,
        subject: str,
        *,
        stage: str = "gpu",
        check: str = "gpu_health",
        message: str = "",
    ) -> None:
        """A FAIL result with one critical finding on ``subject``; a golden node leaves golden."""
        finding = {
            "message": message or f"{subject}: uncorrectable ECC error",
            "severity": "critical",
            "action": "RMA",
            "evidence": "",
            "subject": subject,
        }
        self.store.add_result(name, stage, check, "FAIL", findings=[finding], time=at)
        self._date(at)

    def repair(
        self, name: str, at: datetime, reason: str, back_after: timedelta = timedelta(hours=6)
    ) -> None:
        """`bringup nodes mark-repaired`, then burn-in passes and the node is golden again."""
        self.store.transition(name, State.REPAIR, reason)
        self._date(at)
        self.store.transition(name, State.BURNIN, "burn-in after repair")
        self.store.transition(name, State.GOLDEN, "passed")
        self._date(at + back_after)

    def xids(self, name: str, at: datetime, counts: dict[int, int]) -> None:
        metrics = {"xids": {str(k): v for k, v in counts.items()}, "events": sum(counts.values())}
        self.store.add_result(name, "preflight", "kernel_log", "WARN", metrics=metrics, time=at)

    def drain(self, name: str, at: datetime, reason: str) -> None:
        self.store.record_event(name, "slurm_drain", reason, actor="burnin sync", details={"key": str(at)})
        self._date(at)

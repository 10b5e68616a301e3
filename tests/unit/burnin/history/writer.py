"""Writing a node's past into a real fleet store through its API, dated (``bringup.fleet.dated``:
the store's own writes, each event then dated to when it happened)."""

from __future__ import annotations

from datetime import datetime, timedelta

from bringup.fleet.dated import DatedWriter
from bringup.fleet.lifecycle import State
from bringup.fleet.store import FleetStore
from tests.fleet import walk_to


class PastWriter:
    def __init__(self, store: FleetStore):
        self.store = store
        self.dated = DatedWriter(store)

    def golden(self, name: str, rack: str, at: datetime, profile: str = "h100-sxm-8x400g") -> None:
        with self.dated.at(name, at):
            self.store.enroll(name, rack, profile)
            walk_to(self.store, name, State.GOLDEN)

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
        self.dated.add_result(name, stage, check, "FAIL", at, findings=[finding])

    def repair(
        self, name: str, at: datetime, reason: str, back_after: timedelta = timedelta(hours=6)
    ) -> None:
        """`bringup nodes mark-repaired`, then burn-in passes and the node is golden again."""
        self.dated.transition(name, State.REPAIR, reason, at)
        with self.dated.at(name, at + back_after):
            self.store.transition(name, State.BURNIN, "burn-in after repair")
            self.store.transition(name, State.GOLDEN, "passed")

    def xids(self, name: str, at: datetime, counts: dict[int, int]) -> None:
        metrics = {"xids": {str(k): v for k, v in counts.items()}, "events": sum(counts.values())}
        self.store.add_result(name, "preflight", "kernel_log", "WARN", metrics=metrics, time=at)

    def drain(self, name: str, at: datetime, reason: str) -> None:
        self.dated.record_event(
            name, "slurm_drain", reason, at, actor="burnin sync", details={"key": str(at)}
        )

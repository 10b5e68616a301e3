"""A real burn-in run in its own process, for the interruption tests: ``python -m
tests.unit.burnin.slow_run DB PROFILES NODE MARKER [STAGES]``.

It runs ``burnin.run.session.run_local`` against the fleet store DB for fleet node NODE, with one
check per stage whose command touches MARKER and then sleeps: the test waits for MARKER (the
run is under way: its record is written, the node is in burn-in) and then interrupts or kills
this process.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bringup.fleet.store import FleetStore
from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.result import Result
from burnin.run.session import LocalRunRequest, run_local
from burnin.stages import runner


class Slow(Check):
    description = "touches a marker, then sleeps: a check still running when the run is stopped"
    timeout_s = 120

    def __init__(self, stage: str, marker: str):
        self.name, self.stage, self.marker = f"slow_{stage}", stage, marker

    def command(self, profile: Profile) -> str:
        return f"touch {self.marker}; sleep 100; echo ok"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        return Result.judged(self.name)


def main(db: str, profiles: str, node: str, marker: str, stages: str = "preflight") -> None:
    runner.stage_checks = lambda stage, profile: [Slow(stage, marker)]
    store = FleetStore(f"sqlite:///{db}")
    run_local(store, Path(profiles), LocalRunRequest(stages.split(","), node=node))


if __name__ == "__main__":
    main(*sys.argv[1:])

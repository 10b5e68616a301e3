"""The group stages as objects: what the modules above the stages need to know of a stage that
runs across nodes at once, asked of the stage instead of spelt out by name in each of them.

A ``GroupStage`` says how it runs (over SSH with mpirun or srun, and what ``--launcher slurm``
hands it), when it applies to a profile, which results are its own, how their saved evidence
is judged again (``replay``, one signature for every stage), what a finding of it blames when
the finding names no part, and the section ``burnin report`` draws for it. ``GROUP_STAGES``
holds one object per group stage, in stage order. `burnin rejudge` (burnin/run/rejudge.py), the
report (burnin/report/), the golden rules (burnin/golden/rules.py), the history signals
(burnin/history/signals.py) and a run (burnin/run/session.py) ask these objects; none of them names
a stage (tests/unit/burnin/stages/test_group.py fails if one does).

Where each piece lives, and why here: the stage's logic stays in its own modules (burnin.stages.ib
and .nccl run it, burnin.checks.ib_replay and .nccl_replay judge its records again); this module
wraps them. It sits above the runner (docs/architecture.md: the ib stage's Slurm wiring,
burnin.stages.ib_slurm, imports the runner), so the runner and ``burnin.stages`` cannot import
it: ``burnin.stages.STAGES`` keeps every stage's name and order and ``group_stages()`` the
entry points the runner calls, which ``run`` goes through. The test above fails when they and
``GROUP_STAGES`` disagree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from bringup.profiles.load import Profile
from burnin.checks import ib_replay, nccl_replay
from burnin.checks.ib_load import CHECK as IB_BANDWIDTH
from burnin.checks.nccl import SOAK_CHECK
from burnin.history.signals import STAGE_COMPONENTS
from burnin.parsers import ParseError
from burnin.result import Result
from burnin.stages import ALL_STAGES, group_stages
from burnin.stages.jobs import GroupContext, GroupResults

if TYPE_CHECKING:
    from burnin.stages.slurm_launch import SlurmStageSettings

# The charts `burnin report` can draw for a group stage (burnin.report.html draws them).
PORT_CHART = "port_bandwidth"  # each port's bandwidth, nodes against rails (a heat map)
SOAK_CHART = "soak_bandwidth"  # each node's bus bandwidth over the iterations of a soak


@dataclass(frozen=True)
class ReportSection:
    """The section of the rack report a group stage's results are drawn in (its id: the stage)."""

    chart: str  # PORT_CHART or SOAK_CHART
    title: str


class GroupStage(ABC):
    """A stage that runs across every node still in the run at once and gives each node one
    result of its ``check``."""

    name: ClassVar[str]  # its name in burnin.stages.STAGES: the stage of its results
    check: ClassVar[str]  # the check of the one result it gives each node
    # The part a critical finding of this stage blames when the finding names none (burnin
    # history's component kinds, docs/reliability.md); None: "other".
    component: ClassVar[str | None] = None
    report: ClassVar[ReportSection | None] = None  # None: the report draws nothing for it

    @abstractmethod
    def applies(self, profile: Profile) -> bool:
        """Whether a node of this profile must pass the stage to be golden (burnin.golden.rules)."""

    def run(self, ctx: GroupContext) -> GroupResults:
        """The stage over SSH, its loads launched with mpirun or srun: its entry point, the one
        the runner calls (burnin.stages.group_stages)."""
        return group_stages()[self.name](ctx)

    def slurm_settings(
        self, slurm: SlurmStageSettings, run_id: int, on_line: Callable[[str], None] | None
    ) -> dict[str, Any]:
        """What ``--launcher slurm`` adds to the stage's GroupContext.settings (burnin.run.session);
        nothing by default: the stage launches with srun, as the run's settings say."""
        return {}

    def owns(self, stage: str, check: str) -> bool:
        """Whether a stored result (its stage and check) is this stage's per-node result."""
        return stage == self.name and check == self.check

    @abstractmethod
    def replay(self, evidence: Mapping[str, str], profiles: Mapping[str, Profile]) -> dict[str, Result | str]:
        """Each node's result judged again from the evidence its ``check`` result kept
        (node -> text, the nodes of one run), against ``profiles`` (node -> profile): node ->
        the new Result, or why it cannot be judged again (never a pass it cannot show)."""

    def report_floor(self, profile: Profile) -> float | None:
        """The floor its report section draws for a node of this profile (None: none)."""
        return None


class IbStage(GroupStage):
    """Every InfiniBand port loaded at once, port pairs across the fabric (burnin.stages.ib)."""

    name = "ib"
    check = IB_BANDWIDTH
    component = "hca_port"
    report = ReportSection(PORT_CHART, "InfiniBand bandwidth: nodes against rails")

    def applies(self, profile: Profile) -> bool:
        return profile.ib.hca_count != 0  # a profile without HCAs has no port to load

    def slurm_settings(
        self, slurm: SlurmStageSettings, run_id: int, on_line: Callable[[str], None] | None
    ) -> dict[str, Any]:
        """Its discovery and each of its rounds as one Slurm job (burnin.stages.ib_slurm)."""
        from burnin.stages.ib_slurm import SETTING, SlurmScripts

        return {SETTING: SlurmScripts(slurm, run_id, on_line)}

    def replay(self, evidence: Mapping[str, str], profiles: Mapping[str, Profile]) -> dict[str, Result | str]:
        """Replayed as a whole (burnin.checks.ib_replay): a session spans two nodes' records."""
        out: dict[str, Result | str] = {}
        records: dict[str, dict[str, Any]] = {}
        for node, text in evidence.items():
            try:
                records[node] = ib_replay.parse_record(text)
            except ParseError as exc:
                out[node] = str(exc)
        usable = {n: doc for n, doc in records.items() if n in profiles}
        judged = ib_replay.replay(usable, profiles) if usable else {}
        for node in records:
            out[node] = judged.get(node, f"no {self.name} record for this node")
        return out

    def report_floor(self, profile: Profile) -> float | None:
        return profile.ib.rate_gbps * profile.floors.ib_write_bw_fraction


class NcclStage(GroupStage):
    """A multi-node NCCL soak, then group testing to find the bad node (burnin.stages.nccl)."""

    name = "nccl"
    check = SOAK_CHECK
    report = ReportSection(SOAK_CHART, "NCCL bus bandwidth over the soak")

    def applies(self, profile: Profile) -> bool:
        # Collectives run over whatever network the nodes have: nccl-tests on NVIDIA, rccl-tests
        # (the same programs and output, RCCL's environment: burnin/stages/nccl.py) on AMD.
        return profile.gpu.vendor in ("nvidia", "amd")

    def replay(self, evidence: Mapping[str, str], profiles: Mapping[str, Profile]) -> dict[str, Result | str]:
        """Per soak group, from the group's record each node keeps (burnin.checks.nccl_replay)."""
        out: dict[str, Result | str] = {}
        for node, text in evidence.items():
            if node not in profiles:
                out[node] = f"no profile for {node}"
                continue
            try:
                out[node] = nccl_replay.replay(nccl_replay.parse_record(text), profiles[node])
            except ParseError as exc:
                out[node] = str(exc)
        return out

    def report_floor(self, profile: Profile) -> float | None:
        return profile.floors.nccl_busbw_multi_node_gbps


# Every group stage, in stage order (burnin.stages.STAGES; a name not there fails here).
GROUP_STAGES: tuple[GroupStage, ...] = tuple(
    sorted((IbStage(), NcclStage()), key=lambda s: ALL_STAGES.index(s.name))
)


def stage_components() -> dict[str, str]:
    """The part a finding of each stage blames when it names none: the single-node stages' (the
    history's own table) and each group stage's."""
    return {**STAGE_COMPONENTS, **{s.name: s.component for s in GROUP_STAGES if s.component is not None}}


def group_stage(name: str) -> GroupStage | None:
    """The group stage of this name; None for a single-node stage (or no stage at all)."""
    return next((s for s in GROUP_STAGES if s.name == name), None)


def owner(stage: str, check: str) -> GroupStage | None:
    """The group stage whose per-node result a stored (stage, check) is, if any."""
    return next((s for s in GROUP_STAGES if s.owns(stage, check)), None)


def applies(stage: str, profile: Profile) -> bool:
    """Whether a node of this profile must pass the stage: a single-node stage's checks each
    say whether they apply (burnin.stages.stage_checks), the stage always does."""
    found = group_stage(stage)
    return found is None or found.applies(profile)


def drawn_as(chart: str) -> GroupStage | None:
    """The group stage whose report section draws this chart, if any."""
    return next((s for s in GROUP_STAGES if s.report is not None and s.report.chart == chart), None)

"""The burn-in stages: their order, what each is, and which checks or runner each has.

Single-node stages first (cheap to expensive), multi-node ones after: a node that fails its
preflight never costs a GPU diagnostic, and a node whose GPUs fail never joins a fabric test.

A single-node stage is the checks (burnin.checks) that declare it in ``stages``, sent to each
node as one batch; a group stage runs across every node still in the run at once
(burnin.stages.ib, burnin.stages.nccl). burnin.stages.runner runs both kinds. The modules
above the stages ask a group stage what they need of it (how it runs, when it applies, how its
evidence is judged again, its report section) through its object in burnin.stages.group.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bringup.core.errors import BadInput
from bringup.profiles.load import Profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import Check
from burnin.checks.vendor import fits_vendor
from burnin.stages.jobs import GroupRun


@dataclass(frozen=True)
class Stage:
    name: str
    group: bool = False  # runs across nodes at once (burnin.stages.group), not a batch per node
    # Run only when named (--stages, golden_stages, burnin accept): not in STAGE_ORDER.
    on_request: bool = False


STAGES: tuple[Stage, ...] = (
    Stage("preflight"),  # cheap, read-only, seconds
    # Host performance (memory bandwidth, local NVMe, CPU throttling under load): minutes, and fio
    # writes to a disk. An acceptance stage, run on request: a VM or a CPU without
    # thermal counters can never pass it, and the nightly re-test does not need it.
    Stage("host", on_request=True),
    Stage("gpu"),  # minutes to hours of load
    Stage("pcie"),  # links at idle and under load
    Stage("ib", group=True),  # port pairs across the fabric
    Stage("nccl", group=True),  # collectives across groups of nodes
)

# Every stage, in the order they run; STAGE_ORDER: the stages a run, a nightly and the golden
# rules take when none are named (all but the on-request ones).
ALL_STAGES: tuple[str, ...] = tuple(s.name for s in STAGES)
STAGE_ORDER: tuple[str, ...] = tuple(s.name for s in STAGES if not s.on_request)
GROUP_STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES if s.group)


def parse_stages(text: str | Iterable[str]) -> list[str]:
    """'preflight,gpu' -> ['preflight', 'gpu'] in the canonical order; unknown names are BadInput."""
    names = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    unknown = [n for n in names if n not in ALL_STAGES]
    if unknown:
        raise BadInput(f"unknown stage(s) {', '.join(unknown)} (stages: {', '.join(ALL_STAGES)})")
    if not names:
        raise BadInput(f"no stage given (stages: {', '.join(ALL_STAGES)})")
    return [s for s in ALL_STAGES if s in names]


def is_group_stage(stage: str) -> bool:
    return stage in GROUP_STAGE_NAMES


def stage_checks(stage: str, profile: Profile) -> list[Check]:
    """The checks declaring this single-node stage that apply to this profile's hardware, in the
    order they are registered (burnin.checks); a check reading one GPU vendor's tools runs only
    on that vendor's profiles (burnin/checks/vendor.py)."""
    return [
        c for c in ALL_CHECKS.values() if stage in c.stages and fits_vendor(c, profile) and c.applies(profile)
    ]


def group_stages() -> dict[str, GroupRun]:
    """Group stage name -> its entry point, what the runner calls (and ``GroupStage.run``).
    Imported here, not at the top: single-node runs (and `burnin --help`) never load the
    launchers."""
    from burnin.stages.ib import run_ib_stage
    from burnin.stages.nccl import run_nccl_stage

    return {"ib": run_ib_stage, "nccl": run_nccl_stage}

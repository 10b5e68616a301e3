"""The stage order and which checks each stage runs.

Single-node stages first (cheap to expensive), multi-node ones after: a node that fails its
preflight never costs a GPU diagnostic, and a node whose GPUs fail never joins a fabric test.
"""

from __future__ import annotations

from collections.abc import Iterable

from bringup.profiles import Profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import Check

STAGE_ORDER: tuple[str, ...] = ("preflight", "gpu", "pcie", "ib", "nccl")


def parse_stages(text: str | Iterable[str]) -> list[str]:
    """'preflight,gpu' -> ['preflight', 'gpu'] in the canonical order; unknown names are an error."""
    names = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s.strip()]
    unknown = [n for n in names if n not in STAGE_ORDER]
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)} (stages: {', '.join(STAGE_ORDER)})")
    if not names:
        raise ValueError(f"no stage given (stages: {', '.join(STAGE_ORDER)})")
    return [s for s in STAGE_ORDER if s in names]


def stage_checks(stage: str, profile: Profile) -> list[Check]:
    """The checks of a stage that apply to this profile's hardware, in a stable order."""
    return [c for c in ALL_CHECKS.values() if c.stage == stage and c.applies(profile)]

"""Fleet reliability figures from a failure rate: MTTF by job size, expected ETTR, the checkpoint
interval a target ETTR needs (pure).

Source: Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
Clusters" (Meta, RSC-1/RSC-2, 2024; arXiv:2410.21680), section on job-level reliability:

- r_f, the failure rate, in failures per node-day (RSC-1: 6.5 per 1,000 node-days, RSC-2: 2.34);
- the MTTF of a job on N nodes is 1 / (N x r_f);
- E[ETTR] ~= 1 - N x r_f x (u0 + dt_cp / 2), with u0 the restart cost and dt_cp the checkpoint
  interval, both in days, queueing ignored (valid while N x r_f x (u0 + dt_cp) is small).

Job sizes are in GPUs; nodes = ceil(GPUs / GPUs per node), the GPUs per node from the profile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

from bringup.core.errors import UserError

# 8 to 131,072 GPUs, the sizes the study plots.
JOB_SIZES: tuple[int, ...] = tuple(2**k for k in range(3, 18))
FORMULA_SOURCE = "Kokolis et al., Revisiting Reliability in Large-Scale ML Research Clusters (Meta, 2024)"
ETTR_FORMULA = "E[ETTR] ~= 1 - N x r_f x (u0 + dt_cp/2)"


class ReliabilityError(UserError, ValueError):
    """A figure asked for with inputs it cannot take (no rate, a negative interval...)."""


def per_node_day(rate_per_1000: float) -> float:
    """Failures per 1,000 node-days -> failures per node-day."""
    if rate_per_1000 < 0:
        raise ReliabilityError(f"a failure rate cannot be negative ({rate_per_1000:g} per 1,000 node-days)")
    return rate_per_1000 / 1000.0


def nodes_for(gpus: int, gpus_per_node: int) -> int:
    if gpus <= 0 or gpus_per_node <= 0:
        raise ReliabilityError(f"a job needs GPUs and nodes GPUs (got {gpus} GPUs, {gpus_per_node} per node)")
    return math.ceil(gpus / gpus_per_node)


def mttf_hours(gpus: int, rate_per_1000: float, gpus_per_node: int) -> float:
    """Mean time to failure of a job on ``gpus`` GPUs, hours: 1 / (N x r_f); inf at rate 0."""
    r_f = per_node_day(rate_per_1000)
    n = nodes_for(gpus, gpus_per_node)
    return math.inf if r_f == 0 else 24.0 / (n * r_f)


def mttf_table(
    rate_per_1000: float, gpus_per_node: int, sizes: Sequence[int] = JOB_SIZES
) -> dict[int, float]:
    """GPU count -> MTTF in hours."""
    return {g: mttf_hours(g, rate_per_1000, gpus_per_node) for g in sizes}


def expected_ettr(
    gpus: int, rate_per_1000: float, gpus_per_node: int, checkpoint: timedelta, restart: timedelta
) -> float:
    """E[ETTR] ~= 1 - N x r_f x (u0 + dt_cp/2) (Kokolis et al. 2024), floored at 0."""
    if checkpoint <= timedelta(0) or restart < timedelta(0):
        raise ReliabilityError("the checkpoint interval must be positive and the restart cost not negative")
    n, r_f = nodes_for(gpus, gpus_per_node), per_node_day(rate_per_1000)
    lost = n * r_f * (_days(restart) + _days(checkpoint) / 2)
    return max(0.0, 1.0 - lost)


def checkpoint_for(
    target: float, gpus: int, rate_per_1000: float, gpus_per_node: int, restart: timedelta
) -> timedelta | None:
    """The longest checkpoint interval that keeps E[ETTR] >= ``target`` (the formula solved for
    dt_cp); None when even a checkpoint at every instant cannot (the restart cost alone is too
    much); timedelta.max when no failures are expected."""
    if not 0 < target < 1:
        raise ReliabilityError(f"a target ETTR is between 0 and 1 (got {target:g})")
    n, r_f = nodes_for(gpus, gpus_per_node), per_node_day(rate_per_1000)
    if r_f == 0:
        return timedelta.max
    dt_days = 2 * ((1 - target) / (n * r_f) - _days(restart))
    return timedelta(days=dt_days) if dt_days > 0 else None


def rate_per_1000(failures: int, node_days: float) -> float | None:
    """Measured failures per 1,000 node-days; None without any node-days to divide by."""
    return None if node_days <= 0 else 1000.0 * failures / node_days


def _days(d: timedelta) -> float:
    return d.total_seconds() / 86400.0

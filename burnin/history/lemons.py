"""Lemon nodes (pure): nodes that pass their checks after each repair and keep failing.

The rules, each a policy threshold (``inventories/policies/lemons.yml``; defaults below, with
their sources in ``SOURCES``):

- **same part again**: a hardware part (a GPU slot, an HCA port, a PCIe slot, a DIMM) fails, the
  node is repaired, and the same part fails again (within ``same_part_within_days`` of that
  repair) sooner than chance explains: a lemon whatever the node's own rate. "Sooner than
  chance" is judged against the rest of the fleet: a repeat g days after its repair would come
  by chance with p = g x r, r the failure rate per node-day of the *other* nodes (any part: it
  bounds the chance of the same part), blended with a prior rate for fleets with few node-days;
  the part's repeats together come by chance with the product of their p, and the part names
  the node when that product is at most ``same_part_max_chance``. One repeat counts within
  ``same_part_max_chance / r`` days (about 14 at 2.34 failures per 1,000 node-days, 5 at 6.5);
  two slower ones count together;
- **repairs**, **failures**, **drains**: as many in the window as the policy's limit or more;
- **hardware Xids after the last repair**: Xids that are not application faults (13, 31, 43, 45
  are the application's own), counted since the node's last repair;
- **node-caused job failures** (Slurm accounting, ``burnin.history.jobs``): jobs that ended
  ``NODE_FAIL`` on the node, single-node or multi-node and blamed on it.

A candidate carries the evidence behind it as lines a person reads, and the rows they came from.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

from bringup.core.errors import UserError
from burnin.history.jobs import JobSignals
from burnin.history.signals import ComponentFailure, NodeSignals

HARDWARE_PARTS = frozenset({"gpu", "hca_port", "pcie", "dimm"})
_CHANCES = frozenset({"same_part_max_chance"})  # policy fields that are probabilities


class PolicyError(UserError, ValueError):
    """A lemon policy file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class LemonPolicy:
    window_days: float = 28.0
    same_part_after_repair: bool = True
    same_part_within_days: float = 14.0  # ... within this many days of the repair
    same_part_max_chance: float = 0.033  # ... and sooner than a healthy node fails with this chance
    prior_failure_rate: float = 6.5  # per 1,000 node-days, blended with the fleet's measured rate
    prior_node_days: float = 1000.0  # ... weighing as much as this many measured node-days
    max_repairs: int = 4  # this many repairs in the window or more
    max_failures: int = 4  # this many failures (moves to failed) in the window or more
    max_drains: int = 4  # this many Slurm drains in the window or more
    max_hardware_xids_after_repair: int = 3
    max_node_fail_jobs: int = 4  # jobs ended NODE_FAIL because of the node, in the window
    application_xids: tuple[int, ...] = (13, 31, 43, 45)


SOURCES: dict[str, str] = {
    "window_days": "the policy (burnin lemons --window 28d); Kokolis et al. 2024 (Meta RSC) look back over "
    "weeks",
    "same_part_after_repair": "docs/reliability.md: the same component failing again after a repair is a "
    "lemon whatever its rate; Kokolis et al. 2024: lemon nodes keep failing after repair",
    "same_part_within_days": "lemons re-fail within days of going back (Kokolis et al. 2024: lemons keep "
    "taking jobs down); at 6.5 per 1,000 node-days one GPU slot of 8 re-fails at random within 14 days of "
    "its repair with p ~ 14 x 6.5e-3 x 0.35/8 = 0.4%, within 28 days twice that (benchmarks/lemons.py)",
    "same_part_max_chance": "the policy keeps a repeat a lemon whatever the node's rate; 'again' is a repeat "
    "sooner than chance explains. 0.033 makes one repeat count within 14 days at RSC-2's 2.34 failures per "
    "1,000 node-days (the window that was measured right there) and within 5 days at RSC-1's 6.5, where 14 "
    "days named ~1.3 healthy nodes per 1,000 over 90 days by chance against 12 lemons (benchmarks/lemons.py, "
    "tuned on seeds 101-103)",
    "prior_failure_rate": "Kokolis et al. 2024: RSC-1's 6.5 failures per 1,000 node-days, the higher published "
    "rate (shorter windows, fewer false lemons) until the fleet has measured its own",
    "prior_node_days": "a rack of 36 nodes over 28 days: a small rack or a new fleet judges repeats by the "
    "published rate, a fleet of thousands by its own",
    "max_repairs": "Kokolis et al. 2024 (repair tickets a signal); at RSC-1's 6.5 failures per 1,000 "
    "node-days a healthy node has 0.18 expected in 28 days, so 4 is ~5e-5 by chance",
    "max_failures": "as max_repairs (times out of the scheduler a signal in Kokolis et al. 2024)",
    "max_drains": "as max_repairs (times drained from the scheduler a signal in Kokolis et al. 2024)",
    "max_hardware_xids_after_repair": "the policy's example (Xid 79 x3 after the last repair); Xid counts a "
    "signal in Kokolis et al. 2024",
    "max_node_fail_jobs": "Kokolis et al. 2024 (single-node and multi-node job failures caused by the node); "
    "a node failure ends the one job on it, so at 6.5 per 1,000 node-days a healthy node expects 0.18 in "
    "28 days and 4 is ~5e-5 by chance, as max_repairs; the policy's example ('4 NODE_FAIL jobs')",
    "application_xids": "NVIDIA Xid catalog: 13 (graphics engine exception), 31 (MMU fault), 43 (GPU "
    "stopped processing), 45 (preemptive cleanup) are raised by the application, not the hardware",
}


def parse_policy(data: Any, source: str) -> LemonPolicy:
    """A policy from a YAML document's data; every problem names the file and the field."""
    if data is None:
        return LemonPolicy()
    if not isinstance(data, Mapping):
        raise PolicyError(f"{source}: a lemon policy is a mapping of thresholds, not {type(data).__name__}")
    known = {f.name: f for f in fields(LemonPolicy)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise PolicyError(f"{source}: unknown field {key!r} (known: {', '.join(known)})")
        default = getattr(LemonPolicy(), key)
        try:
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ValueError("true or false")
                values[key] = value
            elif isinstance(default, tuple):
                values[key] = tuple(int(v) for v in value)
            elif isinstance(default, int):
                if isinstance(value, bool) or int(value) != value or value < 1:
                    raise ValueError("a whole number >= 1")
                values[key] = int(value)
            else:
                if isinstance(value, bool) or float(value) <= 0:
                    raise ValueError("a positive number")
                if key in _CHANCES and float(value) > 1:
                    raise ValueError("a chance in (0, 1]")
                values[key] = float(value)
        except (TypeError, ValueError) as exc:
            want = str(exc) if str(exc)[:1].isalpha() and " " in str(exc) else "a value of the default's kind"
            raise PolicyError(f"{source}: field {key!r}: {value!r} is not {want}") from None
    return LemonPolicy(**values)


@dataclass
class Lemon:
    node: str
    rules: list[str]  # the rules that named it
    evidence: list[str]  # what a person reads
    sources: list[str] = field(default_factory=list)  # the store rows behind it
    first_failure: datetime | None = None
    named_at: datetime | None = None  # when the first rule was met (the last signal it needed)

    @property
    def summary(self) -> str:
        return "; ".join(self.evidence)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("first_failure", "named_at"):
            d[k] = d[k].isoformat() if d[k] else None
        d["summary"] = self.summary
        return d


@dataclass(frozen=True)
class Repeat:
    """A hardware part that failed again after repairs sooner than chance explains."""

    failures: list[ComponentFailure]  # one per stretch between repairs
    gaps: list[float]  # days from each repair to the part's next failure (the repeats counted)
    chance: float  # how likely a healthy node's repeats come that soon: the product of gap x rate
    when: datetime  # the repeat that brought the chance down to the policy's bound


def _repeats(sig: NodeSignals, policy: LemonPolicy, rate: float) -> dict[str, Repeat]:
    """Hardware part -> its Repeat, for the parts that failed, were repaired, and failed again
    (within ``same_part_within_days`` of the repair) sooner than chance explains: ``rate`` is the
    failures per node-day a healthy node has, so a repeat g days after its repair comes by chance
    with p = min(1, g x rate), several together with the product of their p."""
    within = timedelta(days=policy.same_part_within_days)
    repairs = sorted(r.time for r in sig.repairs)
    episodes: dict[str, dict[int, ComponentFailure]] = {}
    for c in sorted(sig.components, key=lambda c: c.time):
        if c.component not in HARDWARE_PARTS:
            continue
        stretch = sum(1 for t in repairs if t < c.time)
        episodes.setdefault(c.part, {}).setdefault(stretch, c)
    out = {}
    for part, by_stretch in episodes.items():
        first = min(by_stretch)
        chance, gaps, when = 1.0, [], None
        for k, c in sorted(by_stretch.items()):
            gap = c.time - repairs[k - 1] if k > first else None
            if gap is None or gap > within:
                continue
            gaps.append(gap.total_seconds() / 86400)
            chance *= min(1.0, gaps[-1] * rate)
            if when is None and chance <= policy.same_part_max_chance:
                when = c.time  # named here; the later repeats still go into the evidence
        if when is not None:
            out[part] = Repeat(list(by_stretch.values()), gaps, chance, when)
    return out


def chance_rates(signals: Mapping[str, NodeSignals], policy: LemonPolicy) -> dict[str, float]:
    """Node -> the failures per node-day a healthy node has, its repeats judged against: the
    *other* nodes' rate (never its own: a lemon is one whatever its rate), blended with the
    policy's prior rate weighing ``prior_node_days`` (a small rack or a young fleet is judged by
    the prior). The measured rate counts the nodes that failed at all, as a Poisson rate
    (-ln(1 - share failed) per node-day in the window), so the lemons' own many failures do not
    raise the bar their repeats are judged by (at 1.2% lemons failing weekly, counting every
    failure would add ~70% to a 2.34 fleet's rate)."""
    n = len(signals)
    failed = sum(1 for s in signals.values() if s.failures)
    days = sum(s.node_days for s in signals.values())
    prior = policy.prior_failure_rate / 1000.0
    out = {}
    for name, s in signals.items():
        others, d = n - 1, days - s.node_days
        k = failed - (1 if s.failures else 0)
        measured = 0.0
        if others > 0 and d > 0:
            share = min(k / others, 1 - 0.5 / others)  # every node failed: as good as half a node short
            measured = -math.log1p(-share) / (d / others)
        out[name] = (measured * max(d, 0.0) + prior * policy.prior_node_days) / (
            max(d, 0.0) + policy.prior_node_days
        )
    return out


def judge_node(
    sig: NodeSignals,
    policy: LemonPolicy,
    window: str,
    jobs: JobSignals | None = None,
    rate: float | None = None,
) -> Lemon | None:
    """The node as a lemon candidate, with its evidence, or None. ``jobs``: its Slurm
    accounting signals, when they were read; ``rate``: the failures per node-day a healthy node
    has (``chance_rates``; default the policy's prior)."""
    rules: list[str] = []
    evidence: list[str] = []
    sources: list[str] = []
    met: list[datetime] = []
    if policy.same_part_after_repair:
        r = policy.prior_failure_rate / 1000.0 if rate is None else rate
        for part, rep in sorted(_repeats(sig, policy, r).items()):
            rules.append("same part again")
            gaps = ", ".join(_span(g) for g in rep.gaps)
            chance = f"{rep.chance:.2%}" if rep.chance >= 1e-4 else "< 0.01%"
            evidence.append(
                f"{part} failed again after a repair ({len(rep.failures)} times; {gaps} after the "
                f"repair: by chance {chance} at {r * 1000:.2f} failures per 1,000 node-days; "
                f"last: {rep.failures[-1].message})"
            )
            sources += [str(e.source) for e in rep.failures]
            met.append(rep.when)
    for name, items, limit, what in (
        ("repairs", sig.repairs, policy.max_repairs, "repairs"),
        ("failures", sig.failures, policy.max_failures, "failures"),
        ("drains", sig.drains, policy.max_drains, "Slurm drains"),
    ):
        if len(items) >= limit:
            rules.append(name)
            evidence.append(f"{len(items)} {what} in {window}")
            ordered = sorted(items, key=lambda x: x.time)
            sources += [str(x.source) for x in ordered]
            met.append(ordered[limit - 1].time)
    if sig.repairs:
        last = max(r.time for r in sig.repairs)
        hw = Counter(
            {
                code: n
                for code, n in sig.xid_counts(since=last).items()
                if code not in policy.application_xids and n > 0
            }
        )
        if sum(hw.values()) >= policy.max_hardware_xids_after_repair:
            rules.append("hardware Xids after repair")
            evidence.append(
                ", ".join(f"Xid {code} x{n}" for code, n in sorted(hw.items())) + " after the last repair"
            )
            after = sorted((x for x in sig.xids if x.time > last and x.code in hw), key=lambda x: x.time)
            sources += [str(x.source) for x in after]
            met.append(after[-1].time)
    caused = jobs.node_caused if jobs else []
    if len(caused) >= policy.max_node_fail_jobs:
        rules.append("node-caused job failures")
        evidence.append(_node_fail_line(caused, window))
        sources += [str(r.source) for r in caused]
        met.append(caused[policy.max_node_fail_jobs - 1].end)
    if not rules:
        return None
    context = []
    if jobs:
        if caused and "node-caused job failures" not in rules:
            context.append(_node_fail_line(caused, window))
            sources += [str(r.source) for r in caused]
        if jobs.requeues:
            context.append(f"{len(jobs.requeues)} requeued job(s)")
        if jobs.node_fail_unexplained:
            context.append(
                f"in {len(jobs.node_fail_unexplained)} multi-node NODE_FAIL job(s) blamed on no node"
            )
        rate = jobs.single_node_failure_rate
        if jobs.single_node_failures and rate is not None:
            context.append(
                f"single-node job failure rate {rate:.0%} ({len(jobs.single_node_failures)} of {jobs.single_node_jobs})"
            )
    if "repairs" not in rules and sig.repairs:
        context.append(f"{len(sig.repairs)} repair(s) in {window}")
    parts = sig.failures_by_part()
    context += [
        f"{p} failed {n} times"
        for p, n in parts.most_common(3)
        if n > 1 and not any(p in e for e in evidence)
    ]
    failures = sorted([*(f.time for f in sig.failures), *(c.time for c in sig.components)])
    return Lemon(
        sig.node,
        sorted(set(rules)),
        evidence + context,
        sorted(set(sources)),
        failures[0] if failures else None,
        min(met),
    )


def _span(days: float) -> str:
    """A repeat's gap as a person reads it: minutes, hours or days."""
    if days < 1 / 1440:
        return f"{days * 86400:.0f} s"
    if days < 1 / 24:
        return f"{days * 1440:.0f} min"
    return f"{days * 24:.1f} h" if days < 1 else f"{days:.1f} days"


def _node_fail_line(caused: list[Any], window: str) -> str:
    single = sum(1 for r in caused if r.nodes == 1)
    split = f"{single} single-node, {len(caused) - single} multi-node"
    return f"{len(caused)} NODE_FAIL jobs in {window} ({split}; last: job {caused[-1].job_id})"


def find_lemons(
    signals: Mapping[str, NodeSignals],
    policy: LemonPolicy,
    window: str,
    jobs: Mapping[str, JobSignals] | None = None,
) -> list[Lemon]:
    """The lemon candidates of a fleet, by node name; ``jobs`` (node -> accounting signals) when
    Slurm accounting was read."""
    jobs = jobs or {}
    rates = chance_rates(signals, policy)
    found = (
        judge_node(s, policy, window, jobs.get(name), rates[name]) for name, s in sorted(signals.items())
    )
    return [lemon for lemon in found if lemon is not None]

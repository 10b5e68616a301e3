"""Which proven nodes stand beside the nodes under test in the group stages (pure).

The nightly (burnin/service/nightly_plan.py) and the acceptance of a re-delivery
(burnin/accept/run.py) both burn a few suspect nodes in beside proven ones: the ib stage pairs
the suspects' ports with the partners' and the nccl stage soaks each suspect in a group of
partners, which anchor the localisation (burnin/stages/ib.py, burnin/stages/nccl.py;
docs/in-service.md, "The nightly"). The choice is the same for both: per hardware profile among
the nodes under test (the nccl stage soaks each profile on its own, and the ib stage's rails and
rates are the profile's), candidates of that profile in the caller's order of preference, up to
``partner_count`` of them; a profile with too few gets what there is, and a note says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# The fewest partners a night takes by default: with two, each node under test meets two proven
# ports (what blame by agreement needs) and the partners cross-check each other; a lone partner
# is trusted, so were it the bad one, the node beside it would be blamed.
DEFAULT_PARTNERS = 2


def partner_count(tested: int, partners: int | None = None) -> int:
    """How many partners to take: ``partners`` when given (``--partners N``), else one per
    tested node and at least ``DEFAULT_PARTNERS``, so every tested node has its own partner in
    every ib round and its own nccl group, without a second suspect beside it. Counted per
    hardware profile (``tested``: the tested nodes of one profile)."""
    return partners if partners is not None else max(DEFAULT_PARTNERS, tested)


@dataclass(frozen=True)
class Candidate:
    """A proven node that may stand beside the tested ones, and its hardware profile."""

    name: str
    profile: str = ""


@dataclass
class PartnerChoice:
    chosen: list[str] = field(default_factory=list)  # in the candidates' order
    # profile -> (partners found, partners wanted) for each profile short of partners
    short: dict[str, tuple[int, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # one line per profile short of partners


def choose_partners(
    tested: Sequence[Candidate],
    candidates: Sequence[Candidate],
    cap: int | None = None,
    noun: str = "golden partner",
) -> PartnerChoice:
    """For each profile among ``tested``, ``partner_count`` candidates of that profile, the first
    ones of ``candidates`` (a node under test is never its own partner)."""
    by_profile: dict[str, list[str]] = {}
    for t in tested:
        by_profile.setdefault(t.profile, []).append(t.name)
    under_test = {t.name for t in tested}
    choice = PartnerChoice()
    picked: set[str] = set()
    for profile, names in by_profile.items():
        want = partner_count(len(names), cap)
        got = [c.name for c in candidates if c.profile == profile and c.name not in under_test][:want]
        picked.update(got)
        if len(got) < want:
            choice.short[profile] = (len(got), want)
            choice.notes.append(short_note(profile, names, len(got), want, noun))
    choice.chosen = [c.name for c in candidates if c.name in picked]
    return choice


def short_note(profile: str, tested: Sequence[str], got: int, want: int, noun: str = "golden partner") -> str:
    """'profile P: 1 golden partner free of the 2 wanted for n1, n2'."""
    who = f"profile {profile}" if profile else "partners"
    free = f"{got} {noun}{'s' if got != 1 else ''} free" if got else f"no {noun} free"
    return f"{who}: {free} of the {want} wanted for {', '.join(tested)}"

"""What ``ibnetdiscover -p`` prints for a fabric built from a cabling plan (burnin/fabric/plan.py),
with the cables actually laid given separately so a fault is a change to that list: a cable left
out, two switch ends exchanged, a link trained at a lower width or speed, two devices given one
GUID. The line format is the one burnin/parsers/ibnetdiscover.py reads (real captures in
tests/fixtures/samples/ibnetdiscover_p_*.txt). Used by the fabric tests and benchmarks/fabric.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from burnin.fabric.plan import End, Plan

_SWITCH_BASE = 0x0002C90300000000
_HCA_BASE = 0xB83FD20300000000


def planned_cables(plan: Plan) -> list[tuple[End, End]]:
    return [(link.a, link.b) for link in plan.links]


def swap_switch_ends(cables: list[tuple[End, End]], i: int, j: int) -> list[tuple[End, End]]:
    """Cables i and j with their switch ends exchanged (two cables each at the other's port)."""
    out = list(cables)
    (a, x), (b, y) = out[i], out[j]
    out[i], out[j] = (a, y), (b, x)
    return out


def ibnetdiscover_text(
    plan: Plan,
    cables: Iterable[tuple[End, End]],
    rates: dict[frozenset[End], tuple[str, str]] | None = None,
    guids: dict[str, int] | None = None,
) -> str:
    """The ports report: both directions of every cable, and the down switch ports the plan
    cables that no cable reaches. ``rates`` gives a cable's (width, speed) where it is not the
    plan's; ``guids`` a device's GUID where it is not the generated one."""
    rates, guids = rates or {}, dict(guids or {})
    cables = list(cables)
    names = device_numbers(plan, cables)
    by_name = {s.name: s.guid for s in plan.switches.values() if s.guid is not None}

    def guid(end: End) -> int:
        key = _device_key(end)
        if key in guids:
            return guids[key]
        if end.hca is None:
            return by_name.get(end.device, _SWITCH_BASE + names[key])
        return _HCA_BASE + names[key]

    def desc(end: End) -> str:
        return end.device if end.hca is None else f"{end.device} {end.hca}"

    def kind(end: End) -> str:
        return "SW" if end.hca is None else "CA"

    width, speed = plan.width or "4x", plan.speed or "NDR"
    lines = []
    used = set()
    cabled = {e.device for c in cables for e in c}  # a switch no cable reaches is not seen at all
    for a, b in cables:
        w, s = rates.get(frozenset((a, b)), (width, speed))
        for here, there in ((a, b), (b, a)):
            used.add(here)
            lines.append(
                f"{kind(here)} {names[_device_key(here)] + 1:5d} {here.port:2d} 0x{guid(here):016x} {w} {s} - "
                f"{kind(there)} {names[_device_key(there)] + 1:5d} {there.port:2d} 0x{guid(there):016x} "
                f"( '{desc(here)}' - '{desc(there)}' )"
            )
    for link in plan.links:
        for end in (link.a, link.b):
            if end.hca is None and end not in used and end.device in cabled:
                used.add(end)
                lines.append(
                    f"SW {names[_device_key(end)] + 1:5d} {end.port:2d} 0x{guid(end):016x} {width} ???"
                    f"{'':36s}'{desc(end)}'"
                )
    return "\n".join(lines) + "\n"


def device_numbers(plan: Plan, cables: Iterable[tuple[End, End]]) -> dict[str, int]:
    """Each device's number (its LID is the number + 1): the plan's devices first, in plan order,
    so a device keeps its LID whichever cables are laid (a lab node's ibstat shows the same one);
    then any device only the laid cables name."""
    names: dict[str, int] = {}
    for end in [e for link in plan.links for e in (link.a, link.b)] + [e for c in cables for e in c]:
        names.setdefault(_device_key(end), len(names))
    return names


def _device_key(end: End) -> str:
    return end.device if end.hca is None else f"{end.device} {end.hca}"

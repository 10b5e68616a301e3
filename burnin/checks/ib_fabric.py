"""Which InfiniBand ports are the profile's compute fabric (pure): the one rule every check, the ib
stage and the golden export select ports by.

A node can carry HCAs of the compute fabric's link layer that are not its rails: a Dell XE9780
(HGX B300) has a 4-port ConnectX-7 (CA type MT4129) at 100 Gb/s for storage beside its
ConnectX-8 (MT4131) rails at 800 (tests/fixtures/samples/ibstat_b300_xe9780_cx8_down_cx7_100g_PARTIAL.txt),
and DGX nodes carry storage NICs that run InfiniBand on clusters with IB storage. Judged as rails,
a healthy node of that shape fails on its port count and on each storage port's rate. The
profile's ``ib.ca_types`` names the rails' CA types, as ibstat prints ``CA type`` and sysfs
``/sys/class/infiniband/<dev>/hca_type`` gives it (``MT`` and the PCI device id in decimal:
ConnectX-7 is 15b3:1021, MT4129; docs/platforms.md); empty, every HCA of the link layer is a rail.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from burnin.result import Finding, info


def _norm(text: str) -> str:
    return text.strip().upper()


def on_compute_fabric(
    link_layer: str | None, ca_type: str | None, layer: str, ca_types: Collection[str]
) -> bool:
    """Whether a port is on the compute fabric: its link layer is the profile's and, where the
    profile names CA types, its HCA's CA type is one of them.

    What is unknown counts as the compute fabric: a port whose link layer or CA type the tool did
    not print (an old ibstat, a sysfs tree without ``hca_type``) is judged as a rail, so a real
    rail is never hidden; a storage port judged wrongly fails loudly, a rail left out would not.
    """
    if link_layer is not None and link_layer != layer:
        return False
    if not ca_types or ca_type is None or not ca_type.strip():
        return True
    return _norm(ca_type) in {_norm(t) for t in ca_types}


def fabric_name(layer: str, ca_types: Collection[str]) -> str:
    """How findings name the compute fabric's ports: 'InfiniBand', or 'InfiniBand (CA type MT4131)'."""
    return f"{layer} (CA type {', '.join(ca_types)})" if ca_types else layer


def not_compute_findings(left_out: Iterable[tuple[str, str | None]], verb: str = "judged") -> list[Finding]:
    """One info finding per CA type for the ports of the compute link layer left out by their CA
    type, given as (port name, CA type): listed, never silently dropped."""
    by_type: dict[str, list[str]] = {}
    for name, ca_type in left_out:
        by_type.setdefault(ca_type or "?", []).append(name)
    return [
        info(f"{len(names)} port(s) not the compute fabric (CA type {ca_type}): not {verb}", ", ".join(names))
        for ca_type, names in by_type.items()
    ]

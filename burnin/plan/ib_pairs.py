"""Which InfiniBand ports load which, round by round (pure).

Every active port of every node is loaded at the same time, rail-aligned: port k of a node
(its rail, e.g. ``mlx5_3/1``) only meets port k of other nodes, as on a rail-optimised fabric.
Over R rounds each port meets different partners, so a bad port (it fails with everyone) can
be told from a bad partner (the failure follows the partner):

- Each rail's nodes are paired by the circle method (round-robin tournament): with n nodes
  there are n-1 (n even) or n (n odd) rounds without a repeated pair; more rounds repeat.
- A pair runs one bidirectional session (``ib_write_bw -b``): each port sends and receives at
  line rate.
- Odd counts: the node left over joins one pair as a 3-cycle of one-way sessions x->y->z->x, so
  each of the three ports still sends at line rate to one partner and receives from another,
  exactly the load a pair gets. The pair and the cycle direction are chosen so that ports meet
  as few old partners as possible.
- A rail only one node has (missing ports elsewhere, fewer ports than the profile) cannot be
  loaded: that port is ``unpaired`` in every round.

A session's client connects to its server's TCP port; in a one-way session data flows client
-> server (ib_write_bw writes into the server's memory). TCP ports are distinct per server node
and round.

With ``partners`` (nodes proven good beforehand: a nightly's golden partners), a rail that has
both partners and nodes under test is planned around the partners instead (``_anchored_round``):
each round pairs as many ports under test as there are partner ports with a partner, rotating so
a port meets a different partner each round (partners serve again in later rounds); partners
left over load each other, ports under test left over (too few partners) meet each other as
without partners. A port under test thus never meets another one's while a partner is free, and
a bad one cannot make a healthy one look bad. Every port is still loaded in every round.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

DEFAULT_TCP_PORT = 18515  # perftest's default port (DEF_PORT)


@dataclass(frozen=True, order=True)
class PortKey:
    node: str
    rail: str  # '<hca>/<port>', e.g. 'mlx5_3/1'


@dataclass(frozen=True)
class Session:
    rail: str
    server: str  # node name
    client: str
    bidirectional: bool
    tcp_port: int

    @property
    def ends(self) -> tuple[PortKey, PortKey]:
        return PortKey(self.server, self.rail), PortKey(self.client, self.rail)

    def partner(self, node: str) -> str:
        return self.client if node == self.server else self.server

    def role(self, node: str) -> str:
        return "server" if node == self.server else "client"

    @property
    def label(self) -> str:
        arrow = "<->" if self.bidirectional else "->"
        return f"{self.rail} {self.client}{arrow}{self.server}"


@dataclass(frozen=True)
class Round:
    index: int  # 1-based; re-test rounds continue the numbering
    sessions: tuple[Session, ...]
    unpaired: tuple[PortKey, ...] = ()  # alone on their rail: nothing to load them with
    retest: bool = False

    def sessions_of(self, node: str) -> list[Session]:
        return [s for s in self.sessions if node in (s.server, s.client)]

    @property
    def nodes(self) -> list[str]:
        return sorted({n for s in self.sessions for n in (s.server, s.client)})

    @property
    def loaded(self) -> set[PortKey]:
        return {end for s in self.sessions for end in s.ends}


@dataclass
class _History:
    """Directed (sender, receiver) edges already used on one rail, and the pairs the circle
    method will use in the rounds still to come (a 3-cycle should not take those either)."""

    sent: set[tuple[str, str]] = field(default_factory=set)
    coming: list[set[frozenset[str]]] = field(default_factory=list)  # per round: its pairs

    def repeats(self, edges: Iterable[tuple[str, str]], r: int = -1) -> int:
        later = set().union(*(p for i, p in enumerate(self.coming) if i != r)) if self.coming else set()
        return sum(edge in self.sent or frozenset(edge) in later for edge in edges)

    def add(self, edges: Iterable[tuple[str, str]]) -> None:
        self.sent.update(edges)


def rails_of(ports: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Rail -> its nodes (sorted), from node -> rails."""
    rails: dict[str, set[str]] = {}
    for node, node_rails in ports.items():
        for rail in node_rails:
            rails.setdefault(rail, set()).add(node)
    return {rail: sorted(nodes) for rail, nodes in sorted(rails.items())}


def _circle(nodes: list[str], r: int) -> list[tuple[str | None, str | None]]:
    """Round r of the circle method: node 0 fixed, the others rotated; None is the bye."""
    ring: list[str | None] = list(nodes) + ([None] if len(nodes) % 2 else [])
    n = len(ring)
    k = r % (n - 1)
    rest = ring[1:]
    order = [ring[0], *rest[k:], *rest[:k]]
    return [(order[i], order[n - 1 - i]) for i in range(n // 2)]


def _split_odd(pairs: list[tuple[str | None, str | None]]) -> tuple[list[tuple[str, str]], str | None]:
    """A circle round's pairs without the bye, and the node the bye left alone (None: even)."""
    odd = next((x if y is None else y for x, y in pairs if x is None or y is None), None)
    return [(x, y) for x, y in pairs if x is not None and y is not None], odd


def _cycles_through(x: str, y: str, odd: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The 3-cycle that joins ``odd`` to the pair (x, y), in both directions."""
    return [(x, y), (y, odd), (odd, x)], [(y, x), (x, odd), (odd, y)]


def _rail_round(nodes: list[str], r: int, history: _History) -> list[tuple[str, str, bool]]:
    """(sender/client, receiver/server, bidirectional) flows of one rail in round r."""
    if len(nodes) < 2:
        return []
    if len(nodes) == 3:  # one 3-cycle; alternate its direction so each port's partners change
        best = min(_cycles_through(*nodes), key=history.repeats)
        history.add(best)
        return [(x, y, False) for x, y in best]
    real, bye = _split_odd(_circle(nodes, r))
    merged: tuple[int, list[tuple[str, str]]] | None = None
    if bye is not None:
        # Join the odd node to the pair (and direction) that repeats the fewest old edges.
        candidates = []
        for i, (x, y) in enumerate(real):
            for cycle in _cycles_through(x, y, bye):
                candidates.append((history.repeats(cycle, r), i, cycle))
        _, index, cycle = min(candidates, key=lambda c: (c[0], c[1]))
        merged = (index, cycle)
    return _pair_flows(real, merged, history)


def _anchored_round(
    suspects: list[str], partners: list[str], r: int, history: _History
) -> list[tuple[str, str, bool]]:
    """Round r of a rail with both nodes under test and partners (see the module docstring)."""
    m, k = len(suspects), len(partners)
    start = (r * k) % m if k < m else 0  # too few partners: the ones that get them rotate
    chosen = [suspects[(start + i) % m] for i in range(min(m, k))]
    pairs = [(partners[(i + r) % k], s) for i, s in enumerate(chosen)]  # the proven port serves
    spare = [p for p in partners if p not in {a for a, _ in pairs}] + [s for s in suspects if s not in chosen]
    spare_pairs, lone = _split_odd(_circle(spare, r)) if spare else ([], None)  # one alone: lone
    pairs += spare_pairs
    merged = None
    if lone is not None:
        # The odd one joins a pair as a 3-cycle: a pair with a partner in it first, so a node
        # under test left over meets a partner too; then the fewest repeated edges.
        candidates = []
        for i, (x, y) in enumerate(pairs):
            for cycle in _cycles_through(x, y, lone):
                suspect_edges = sum(a not in partners and b not in partners for a, b in cycle)
                candidates.append((suspect_edges, history.repeats(cycle), i, cycle))
        _, _, index, cycle = min(candidates, key=lambda c: c[:3])
        merged = (index, cycle)
    return _pair_flows(pairs, merged, history)


def _pair_flows(
    pairs: list[tuple[str, str]], merged: tuple[int, list[tuple[str, str]]] | None, history: _History
) -> list[tuple[str, str, bool]]:
    """A round's flows: each pair both ways, the pair at ``merged``'s index replaced by its 3-cycle."""
    flows: list[tuple[str, str, bool]] = []
    for i, (x, y) in enumerate(pairs):
        if merged is not None and merged[0] == i:
            history.add(merged[1])
            flows += [(a, b, False) for a, b in merged[1]]
        else:
            history.add([(x, y), (y, x)])
            flows.append((y, x, True))  # the first of the pair serves
    return flows


def _sessions(flows: list[tuple[str, str, str, bool]], base_tcp_port: int) -> tuple[Session, ...]:
    """Sessions with TCP ports numbered per server node, in a stable order."""
    next_port: dict[str, int] = {}
    sessions = []
    for rail, client, server, bidirectional in sorted(flows):
        port = next_port.get(server, base_tcp_port)
        next_port[server] = port + 1
        sessions.append(Session(rail, server, client, bidirectional, port))
    return tuple(sessions)


def plan_rounds(
    ports: Mapping[str, Iterable[str]],
    rounds: int,
    base_tcp_port: int = DEFAULT_TCP_PORT,
    partners: Collection[str] = (),
) -> list[Round]:
    """The load rounds for these ports (node -> its active rails); ``partners``: the nodes
    proven good beforehand, whose ports the others' are paired with (see the module docstring)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    rails = rails_of(ports)
    proven = set(partners)
    anchored = {
        rail: ([n for n in nodes if n not in proven], [n for n in nodes if n in proven])
        for rail, nodes in rails.items()
        if proven & set(nodes) and set(nodes) - proven
    }
    histories = {
        rail: _History(
            coming=[{frozenset(p) for p in _circle(nodes, r) if None not in p} for r in range(rounds)]
            if len(nodes) > 3 and rail not in anchored
            else []
        )
        for rail, nodes in rails.items()
    }
    planned = []
    for r in range(rounds):
        flows: list[tuple[str, str, str, bool]] = []
        unpaired = []
        for rail, nodes in rails.items():
            if len(nodes) < 2:
                unpaired += [PortKey(node, rail) for node in nodes]
                continue
            if rail in anchored:
                rail_flows = _anchored_round(*anchored[rail], r, histories[rail])
            else:
                rail_flows = _rail_round(nodes, r, histories[rail])
            flows += [(rail, c, s, b) for c, s, b in rail_flows]
        planned.append(Round(r + 1, _sessions(flows, base_tcp_port), tuple(sorted(unpaired))))
    return planned


def unpartnered(rounds: Iterable[Round], partners: Collection[str]) -> dict[str, set[str]]:
    """Node under test -> the other nodes under test its ports met: what too few partner ports
    left to meet each other (empty when every port under test met partners, or none are given)."""
    proven = set(partners)
    met: dict[str, set[str]] = {}
    if not proven:
        return met
    for round_ in rounds:
        for s in round_.sessions:
            if s.server not in proven and s.client not in proven:
                met.setdefault(s.server, set()).add(s.client)
                met.setdefault(s.client, set()).add(s.server)
    return met


def plan_retest(
    suspects: Iterable[PortKey],
    partners: Mapping[str, Iterable[str]],
    must_avoid: Mapping[PortKey, Collection[str]],
    met: Mapping[PortKey, Collection[str]],
    index: int,
    base_tcp_port: int = DEFAULT_TCP_PORT,
) -> tuple[Round, list[PortKey]]:
    """One re-test round: each suspect port against a partner proven on its rail.

    ``suspects`` in priority order (most suspicious first); ``partners``: rail -> nodes whose
    port on that rail passed (preferred first); ``must_avoid``: nodes a suspect must not meet
    (the partner it failed with); ``met``: nodes it met already (used only when nothing else is
    left). Each port is in at most one session; returns the round and the suspects that found
    no partner (they stay untested).
    """
    busy: set[PortKey] = set()
    flows: list[tuple[str, str, str, bool]] = []
    untested = []
    for suspect in suspects:
        if suspect in busy:
            continue
        avoid = set(must_avoid.get(suspect, ())) | {suspect.node}
        free = [n for n in partners.get(suspect.rail, ()) if PortKey(n, suspect.rail) not in busy]
        free = [n for n in free if n not in avoid]
        fresh = [n for n in free if n not in set(met.get(suspect, ()))]
        choice = (fresh or free or [None])[0]
        if choice is None:
            untested.append(suspect)
            continue
        busy |= {suspect, PortKey(choice, suspect.rail)}
        flows.append((suspect.rail, suspect.node, choice, True))  # the proven port serves
    return Round(index, _sessions(flows, base_tcp_port), (), retest=True), untested


def plan_waves(round_: Round, bound: int) -> list[Round]:
    """The round in waves of at most ``bound`` nodes, run one after the other, so a round over
    more nodes than the controller holds sessions for keeps the bound.

    A session's two ends are always in one wave. Nodes that load each other (a pair, a 3-cycle,
    a pair that differs on some rail: one group, linked by sessions) stay in one wave, so each
    node runs all its servers and clients in one SSH session; only a group larger than a wave
    is split by session, and its nodes then run in more than one wave. Groups are packed first
    fit, largest first. A round within the bound is one wave, itself.
    """
    if bound < 2:
        raise ValueError(f"a wave needs room for a session's two ends, got a bound of {bound}")
    if len(round_.nodes) <= bound:
        return [round_]
    parent: dict[str, str] = {}

    def root(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for s in round_.sessions:
        a, b = root(s.server), root(s.client)
        if a != b:
            parent[max(a, b)] = min(a, b)
    groups: dict[str, list[Session]] = {}
    for s in round_.sessions:
        groups.setdefault(root(s.server), []).append(s)
    ordered = sorted(groups.values(), key=lambda g: (-len(_nodes_of(g)), min(_nodes_of(g))))
    waves: list[tuple[set[str], list[Session]]] = []

    def place(nodes: set[str], sessions: list[Session]) -> None:
        for wave_nodes, wave_sessions in waves:
            if len(wave_nodes | nodes) <= bound:
                wave_nodes |= nodes
                wave_sessions += sessions
                return
        waves.append((set(nodes), list(sessions)))

    for group in ordered:
        nodes = _nodes_of(group)
        if len(nodes) <= bound:
            place(nodes, group)
        else:  # larger than a wave: by session
            for s in group:
                place({s.server, s.client}, [s])
    order = {s: i for i, s in enumerate(round_.sessions)}
    return [
        Round(
            round_.index,
            tuple(sorted(sessions, key=order.__getitem__)),
            round_.unpaired if i == 0 else (),
            round_.retest,
        )
        for i, (_, sessions) in enumerate(waves)
    ]


def _nodes_of(sessions: Iterable[Session]) -> set[str]:
    return {n for s in sessions for n in (s.server, s.client)}

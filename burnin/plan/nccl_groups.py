"""NCCL soak groups, and finding the bad node(s) by adaptive group testing. Pure: no I/O.

The soak runs the rack in groups (``plan_groups``). A bad node makes every test it is in fail
(wrong data, a crash), hang, or run below the bandwidth floor; a healthy node never does (a
flaky outcome is handled, see below). ``Localizer`` is the state machine the runner drives:

    loc = Localizer(nodes, group_size)
    while tests := loc.next_tests():          # disjoint node sets: run them all at once
        for test in tests:
            loc.record(test, passed=run_nccl(test))
    loc.culprits, loc.cleared, loc.unresolved, loc.blames()

What it knows, derived from the history of trials each time:

- a node is *cleared* once it passed a trial (an anchor: it pads later trials);
- a failed trial's *residual* is its members not cleared. Residual of one node: that node is
  a *culprit* (isolated). Residual of several: an open *pool* that holds at least one culprit.
  A failed trial that contains a known culprit says nothing about its other members; they go
  back to *untested* and are screened again;
- each round splits every open pool into as many parts as the parallel budget and the free
  anchors allow (``fanout`` caps it), pads parts smaller than ``min_nodes`` with anchors, and
  screens untested nodes. Without anchors (all nodes in one failing group, or a bad node in
  every group), parts are made big enough to run alone, or small parts of different pools are
  tested together;
- *confirmation*: a culprit must fail two trials aimed at it alone (itself + anchors), three
  once the run has shown a flaky outcome; it is re-tested with other anchors until it has them
  (``confirm``; a pass instead makes its earlier failure a conflict, see below). Being the
  last uncleared member of a failed pool identifies a culprit but does not confirm it: the pool
  may have failed spuriously;
- *flaky outcomes*: a failed trial whose members are all cleared is a conflict. It is re-run
  once: a pass voids the failure (flaky); a second failure revokes its members' clearance so
  they are split again with fresh anchors; a conflict after that leaves its members unresolved.
- nodes that cannot be told apart (two nodes and nothing else, or the round limit) end
  *unresolved*: never golden, never blamed;
- *anchors given beforehand* (``anchors``: a nightly's golden partners) are cleared from the
  start: never the subjects of a trial, so a failed soak group of one node under test and
  anchors blames that node (``plan_anchored_groups`` forms such groups). An anchor whose trials
  all failed is screened with other anchors once they are free, so it passes on a run of its
  own; a reproduced conflict revokes its clearance like any other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

MIN_TEST_NODES = 2  # the smallest multi-node collective

# Trial.purpose values
PURPOSES = ("group", "split", "screen", "cross", "confirm", "retest")


def _chunks(items: Sequence[str], parts: int) -> list[list[str]]:
    """``items`` in ``parts`` consecutive chunks whose sizes differ by at most one."""
    parts = max(1, min(parts, len(items)))
    base, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        size = base + (1 if i < extra else 0)
        out.append(list(items[start : start + size]))
        start += size
    return out


def plan_groups(nodes: Sequence[str], group_size: int, min_nodes: int = MIN_TEST_NODES) -> list[list[str]]:
    """Soak groups: consecutive nodes (rack order keeps a group under few leaf switches), at most
    ``group_size`` each and balanced, so no group is left with fewer than ``min_nodes``.
    ``group_size`` 0 (or >= the node count) is one group of every node."""
    nodes = list(nodes)
    if len(set(nodes)) != len(nodes):
        raise ValueError("plan_groups: a node is listed twice")
    if not nodes:
        return []
    if group_size <= 0 or group_size >= len(nodes):
        return [nodes]
    size = max(group_size, min_nodes)
    count = max(1, min(math.ceil(len(nodes) / size), len(nodes) // min_nodes))
    return _chunks(nodes, count)


def plan_anchored_groups(
    nodes: Sequence[str], anchors: Iterable[str], group_size: int, min_nodes: int = MIN_TEST_NODES
) -> list[list[str]]:
    """Soak groups when some nodes are proven good (``anchors``): one group per node under test,
    the anchors dealt out among them, so no group holds a second suspect and a failing one blames
    its one. Fewer anchors than nodes under test: one group per anchor, the nodes under test
    shared out (localisation tells them apart). ``group_size`` > 0 caps a group's anchors; those
    left over soak in groups of their own (one alone joins a group). No anchors, or no node under
    test, or groups over ``group_size`` anyway: ``plan_groups``."""
    proven = set(anchors)
    subjects = [n for n in nodes if n not in proven]
    pads = [n for n in nodes if n in proven]
    count = min(len(subjects), len(pads), len(nodes) // max(1, min_nodes))
    cap = max(group_size, min_nodes) if group_size > 0 else len(nodes)
    chunks = _chunks(subjects, count) if count else []
    if not chunks or any(len(c) >= cap for c in chunks):
        return plan_groups(nodes, group_size, min_nodes)
    groups = [list(c) for c in chunks]
    spare = []
    for i, anchor in enumerate(pads):  # dealt round-robin: the groups' sizes differ by one at most
        group = groups[i % count]
        (group if len(group) < cap else spare).append(anchor)
    if len(spare) >= min_nodes:
        groups += plan_groups(spare, group_size, min_nodes)
    else:
        for anchor in spare:
            min(groups, key=len).append(anchor)
    return groups


@dataclass(frozen=True)
class Trial:
    """One test that was run and its outcome."""

    index: int  # position in the history
    nodes: frozenset[str]
    passed: bool
    round: int
    purpose: str  # one of PURPOSES
    detail: str = ""  # what the runner said: 'hang after 600 s', 'busbw 12.1 < 360 GB/s'...
    subjects: frozenset[str] = frozenset()  # the nodes under test; the others are anchors (proven good)
    retest_of: int | None = None  # index of the trial a 'retest' re-runs

    def to_dict(self, order: dict[str, int] | None = None) -> dict[str, Any]:
        key = (lambda n: (order.get(n, len(order)), n)) if order else None
        return {
            "index": self.index,
            "round": self.round,
            "nodes": sorted(self.nodes, key=key),
            "passed": self.passed,
            "purpose": self.purpose,
            "detail": self.detail,
            **(
                {"anchors": sorted(self.nodes - self.subjects, key=key)} if self.nodes - self.subjects else {}
            ),
            **({"retest_of": self.retest_of} if self.retest_of is not None else {}),
        }


@dataclass(frozen=True)
class Blame:
    """A culprit and the evidence against it."""

    node: str
    direct: tuple[Trial, ...]  # failed trials in which every other member was proven good
    implicating: tuple[Trial, ...]  # every failed trial it was in (groups, splits, direct ones)
    passed: tuple[Trial, ...]  # trials it passed (a flaky node has some)
    confirmed: bool  # failed 2 trials aimed at it alone (itself + anchors); 3 after a flaky outcome

    def to_dict(self, order: dict[str, int] | None = None) -> dict[str, Any]:
        return {
            "node": self.node,
            "confirmed": self.confirmed,
            "direct": [t.to_dict(order) for t in self.direct],
            "implicating": [t.to_dict(order) for t in self.implicating],
            "passed": [t.to_dict(order) for t in self.passed],
        }


@dataclass(frozen=True)
class _Plan:
    purpose: str
    subjects: frozenset[str]
    retest_of: int | None = None


@dataclass
class _State:
    cleared: set[str]
    direct: dict[str, list[int]]  # isolated culprit -> indices of the failed trials isolating it
    targeted: dict[str, list[int]]  # node -> failed trials aimed at it alone (subjects == {node})
    pools: list[frozenset[str]]  # minimal open pools (each holds >= 1 culprit)
    untested: list[str]  # neither cleared, culprit, in a pool, nor unresolved: to screen
    conflicts: list[Trial]  # failed trials of cleared nodes only
    passes: dict[str, int] = field(default_factory=dict)  # node -> passing trials counted
    needed: int = 2  # targeted failures that confirm a culprit: 3 once this run has shown flakiness


class Localizer:
    """Adaptive group testing over ``nodes``; see the module docstring.

    ``group_size``: the soak groups of round 1 (0 = one group of all nodes).
    ``min_nodes``: the fewest nodes a trial may have (2: a multi-node collective).
    ``fanout``: at most this many parts per pool split (None: as many as the budget allows).
    ``max_parallel``: at most this many trials per localisation round (None: no limit); the
    first round (the soak groups) is never capped.
    ``confirm``: blame a culprit only after two failures aimed at it alone (three after a
    flaky outcome), re-testing it with other anchors until it has them; False: one will do.
    ``groups``: round 1's groups when the runner has its own (a partition of ``nodes``);
    default ``plan_groups(nodes, group_size)``.
    ``max_rounds``: stop after this many rounds; what is left open is unresolved.
    ``anchors``: nodes proven good before this run (a subset of ``nodes``); cleared from the
    start, never a trial's subject; round 1 is ``plan_anchored_groups`` unless ``groups`` is given.
    """

    def __init__(
        self,
        nodes: Iterable[str],
        group_size: int = 0,
        *,
        min_nodes: int = MIN_TEST_NODES,
        fanout: int | None = None,
        max_parallel: int | None = 64,
        confirm: bool = True,
        groups: Sequence[Sequence[str]] | None = None,
        max_rounds: int = 40,
        anchors: Iterable[str] = (),
    ) -> None:
        self.nodes: tuple[str, ...] = tuple(nodes)
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError("Localizer: a node is listed twice")
        if any(not isinstance(n, str) or not n for n in self.nodes):
            raise ValueError("Localizer: node names must be non-empty strings")
        if fanout is not None and fanout < 2:
            raise ValueError("Localizer: fanout must be at least 2 (or None)")
        if max_parallel is not None and max_parallel < 1:
            raise ValueError("Localizer: max_parallel must be at least 1 (or None)")
        if groups is not None:
            flat = [n for g in groups for n in g]
            if sorted(flat) != sorted(self.nodes) or any(not g for g in groups):
                raise ValueError("Localizer: groups must split the nodes, each node in exactly one group")
        self.anchors = frozenset(anchors)
        if not self.anchors <= set(self.nodes):
            raise ValueError("Localizer: anchors must be among the nodes")
        self._groups = [list(g) for g in groups] if groups is not None else None
        self._order = {n: i for i, n in enumerate(self.nodes)}
        self.group_size = group_size
        self.min_nodes = max(1, min(min_nodes, len(self.nodes)))  # a one-node rack is tested alone
        self.fanout = fanout
        self.max_parallel = max_parallel
        self.confirm = confirm
        self.max_rounds = max_rounds
        self.round = 0
        self._history: list[Trial] = []
        self._pending: dict[frozenset[str], _Plan] = {}
        self._revoked: dict[str, int] = {}  # node -> history index: passes up to it no longer clear it
        self._unresolved: dict[str, str] = {}  # node -> why it could not be judged
        self._done = not self.nodes
        self.stop_reason = "no nodes" if self._done else ""

    # --- the runner's interface -------------------------------------------------------------

    def next_tests(self) -> list[frozenset[str]]:
        """The trials of the current round (disjoint node sets, to run in parallel); the same
        list until every one is recorded; [] once localisation is over."""
        if self._pending:
            return list(self._pending)
        if self._done:
            return []
        if self.round >= self.max_rounds:
            self._finish(f"stopped after {self.max_rounds} rounds")
            return []
        plans = self._plan()
        if not plans:
            self._finish("nothing left to test" if not self._open() else "no informative trial left")
            return []
        self.round += 1
        self._pending = dict(plans)
        return list(self._pending)

    def record(self, test: Iterable[str], passed: bool, detail: str = "") -> Trial:
        """The outcome of one trial handed out by ``next_tests``."""
        key = frozenset(test)
        plan = self._pending.pop(key, None)
        if plan is None:
            raise ValueError(f"record: {sorted(key)[:4]}... is not a pending trial of round {self.round}")
        trial = Trial(
            len(self._history),
            key,
            bool(passed),
            self.round,
            plan.purpose,
            detail,
            plan.subjects,
            plan.retest_of,
        )
        self._history.append(trial)
        return trial

    def run(self, outcome: Callable[[frozenset[str]], bool]) -> Localizer:
        """Drive to the end with ``outcome(test) -> passed`` (simulations, tests)."""
        while tests := self.next_tests():
            for test in tests:
                self.record(test, outcome(test))
        return self

    # --- results ----------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._done

    @property
    def history(self) -> tuple[Trial, ...]:
        return tuple(self._history)

    @property
    def culprits(self) -> tuple[str, ...]:
        """Isolated bad nodes, in node order (final once ``done``)."""
        return tuple(self._sorted(self._state().direct))

    @property
    def cleared(self) -> frozenset[str]:
        return frozenset(self._state().cleared)

    @property
    def unresolved(self) -> dict[str, str]:
        """Nodes that could not be told good or bad, with why (final once ``done``)."""
        return {n: self._unresolved[n] for n in self._sorted(self._unresolved)}

    def evidence(self, node: str) -> list[Trial]:
        """Every trial ``node`` was in, in order."""
        return [t for t in self._history if node in t.nodes]

    def blames(self) -> list[Blame]:
        state = self._state()
        out = []
        for node in self._sorted(state.direct):
            trials = self.evidence(node)
            direct = tuple(self._history[i] for i in state.direct[node])
            out.append(
                Blame(
                    node,
                    direct,
                    tuple(t for t in trials if not t.passed),
                    tuple(t for t in trials if t.passed),
                    confirmed=len(state.targeted.get(node, ())) >= state.needed,
                )
            )
        return out

    def ordered(self, test: Iterable[str]) -> list[str]:
        """A trial's nodes in the order they were given (rank order for a hostfile)."""
        return sorted(test, key=lambda n: (self._order.get(n, len(self._order)), n))

    @property
    def stats(self) -> dict[str, int]:
        return {
            "rounds": self.round,
            "trials": len(self._history),
            "node_trials": sum(len(t.nodes) for t in self._history),
        }

    def summary(self) -> dict[str, Any]:
        """JSON-able account of the localisation: what was found, and every trial."""
        return {
            **self.stats,
            "done": self._done,
            "stop_reason": self.stop_reason,
            "culprits": [b.to_dict(self._order) for b in self.blames()],
            "unresolved": self.unresolved,
            "cleared": self._sorted(self.cleared),
            **({"anchors": self._sorted(self.anchors)} if self.anchors else {}),
            "history": [t.to_dict(self._order) for t in self._history],
        }

    # --- derivation -------------------------------------------------------------------------

    def _sorted(self, nodes: Iterable[str]) -> list[str]:
        return sorted(nodes, key=lambda n: (self._order.get(n, len(self._order)), n))

    def _state(self) -> _State:
        void = {t.retest_of for t in self._history if t.passed and t.retest_of is not None}
        passes: dict[str, int] = {}
        for t in self._history:
            if t.passed:
                for n in t.nodes:
                    if t.index > self._revoked.get(n, -1):
                        passes[n] = passes.get(n, 0) + 1
        unresolved = set(self._unresolved)
        cleared = (set(passes) | {a for a in self.anchors if a not in self._revoked}) - unresolved
        direct: dict[str, list[int]] = {}
        targeted: dict[str, list[int]] = {}
        pools: set[frozenset[str]] = set()
        conflicts = []
        for t in self._history:
            if t.passed or t.index in void or t.nodes & unresolved:
                continue  # a failure with an unresolved member is explained by it
            if len(t.subjects) == 1:
                targeted.setdefault(next(iter(t.subjects)), []).append(t.index)
            residual = t.nodes - cleared
            if not residual:
                conflicts.append(t)
            elif len(residual) == 1:
                direct.setdefault(next(iter(residual)), []).append(t.index)
            else:
                pools.add(frozenset(residual))
        open_pools = [p for p in pools if not p & direct.keys()]  # explained by a known culprit
        minimal = [p for p in open_pools if not any(q < p for q in open_pools)]
        minimal.sort(key=lambda p: (len(p), min(self._order[n] for n in p)))
        in_pools = set().union(*minimal) if minimal else set()
        known = cleared | direct.keys() | in_pools | unresolved
        untested = [n for n in self.nodes if n not in known]
        flaky = bool(conflicts) or any(t.purpose == "retest" for t in self._history)
        return _State(cleared, direct, targeted, minimal, untested, conflicts, passes, 3 if flaky else 2)

    def _open(self) -> bool:
        state = self._state()
        return bool(state.pools or state.untested or state.conflicts)

    def _finish(self, reason: str) -> None:
        state = self._state()
        for pool in state.pools:
            for n in pool:
                self._unresolved.setdefault(n, "could not be told apart from " + self._names(pool - {n}))
        for n in state.untested:
            self._unresolved.setdefault(n, "not tested after an earlier trial it was in failed")
        for c in state.conflicts:
            for n in c.nodes:
                self._unresolved.setdefault(
                    n, f"trial {c.index} failed although every member passed elsewhere"
                )
        self._done = True
        self.stop_reason = reason

    def _names(self, nodes: Iterable[str], limit: int = 6) -> str:
        names = self._sorted(nodes)
        more = f" and {len(names) - limit} more" if len(names) > limit else ""
        return ", ".join(names[:limit]) + more

    def _settle_conflicts(self, state: _State) -> tuple[_State, list[Trial]]:
        """Reproduced conflicts revoke their members' clearance once, then leave them unresolved.
        Returns the state and the conflicts still to re-run."""
        while True:  # each pass revokes or gives up on at least one node, or ends: bounded
            retested = {t.retest_of for t in self._history if t.retest_of is not None}
            to_retest = [c for c in state.conflicts if c.retest_of is None and c.index not in retested]
            reproduced = [c for c in state.conflicts if c not in to_retest]
            if not reproduced:
                return state, to_retest
            c = reproduced[0]
            if not any(n in self._revoked for n in c.nodes):
                for n in c.nodes:
                    self._revoked[n] = len(self._history) - 1
            else:
                for n in c.nodes:
                    self._unresolved.setdefault(n, f"failed trial {c.index} again though each member passed")
            state = self._state()

    # --- planning ---------------------------------------------------------------------------

    def _plan(self) -> list[tuple[frozenset[str], _Plan]]:
        if self.round == 0:
            if self._groups is not None:
                groups = self._groups
            elif self.anchors:
                groups = plan_anchored_groups(self.nodes, self.anchors, self.group_size, self.min_nodes)
            else:
                groups = plan_groups(self.nodes, self.group_size, self.min_nodes)
            return [(frozenset(g), _Plan("group", frozenset(g) - self.anchors)) for g in groups]
        state, to_retest = self._settle_conflicts(self._state())
        busy: set[str] = set()
        plans: list[tuple[frozenset[str], _Plan]] = []
        budget = self.max_parallel if self.max_parallel is not None else math.inf

        def add(nodes: Iterable[str], plan: _Plan) -> None:
            key = frozenset(nodes)
            assert len(key) >= self.min_nodes and not key & busy, (
                "planner bug: undersized or overlapping trial"
            )
            busy.update(key)
            plans.append((key, plan))

        def room() -> float:
            return budget - len(plans)

        for c in to_retest:
            if room() >= 1 and not c.nodes & busy:
                add(c.nodes, _Plan("retest", c.subjects, retest_of=c.index))

        # Pads: the anchors given beforehand first (golden partners, not nodes under test), then
        # by passes.
        anchors = sorted(
            state.cleared,
            key=lambda n: (n not in self.anchors, -state.passes.get(n, 0), self._order[n]),
        )

        def take(count: int, avoid: frozenset[str] | set[str] = frozenset()) -> list[str] | None:
            free = [a for a in anchors if a not in busy]
            picked = [a for a in free if a not in avoid][:count]
            if len(picked) < count:
                picked += [a for a in free if a in avoid and a not in picked][: count - len(picked)]
            return picked if len(picked) == count else None

        if self.confirm:
            for node in self._sorted(state.direct):
                # Isolation by elimination (a pool whose other members passed) does not count: the
                # pool may have failed spuriously. Failures aimed at the node alone do.
                if len(state.targeted.get(node, ())) >= state.needed or node in busy or room() < 1:
                    continue
                tries = sum(t.purpose == "confirm" and t.subjects == {node} for t in self._history)
                if tries >= state.needed:
                    continue
                earlier = set().union(*(t.nodes for t in self._history if node in t.nodes and not t.passed))
                pad = take(self.min_nodes - 1, avoid=earlier)
                if pad is not None:
                    add([node, *pad], _Plan("confirm", frozenset({node})))

        leftovers: list[list[str]] = []
        pools = [p for p in state.pools if not p & busy]
        total = sum(len(p) for p in pools)
        for pool in pools:
            if room() < 1:
                break
            share = math.floor(room() * len(pool) / total) if math.isfinite(room()) else len(pool)
            total -= len(pool)
            if pool & busy:  # overlapping pools (after cross trials): this one waits a round
                continue
            members = self._sorted(pool)
            cap = min(len(pool), max(2, share), self.fanout or len(pool))
            chosen = None
            for parts in range(cap, 1, -1):
                chunks = _chunks(members, parts)
                need = sum(max(0, self.min_nodes - len(c)) for c in chunks)
                if need <= len([a for a in anchors if a not in busy]):
                    chosen = chunks
                    break
            if chosen is None:  # not even two parts can be padded: run what can run alone
                chosen = _chunks(members, 2)
            for chunk in chosen:
                if room() < 1:
                    break  # the parts left wait for the next round (a failing part narrows the pool)
                pad = take(max(0, self.min_nodes - len(chunk)))
                if pad is None:
                    leftovers.append(chunk)
                else:
                    add([*chunk, *pad], _Plan("split", frozenset(chunk)))

        screen_size = self.group_size if self.group_size > 0 else len(state.untested)
        free_untested = [n for n in state.untested if n not in busy]
        for chunk in plan_groups(free_untested, screen_size, self.min_nodes) if free_untested else []:
            if room() < 1:
                break
            pad = take(max(0, self.min_nodes - len(chunk)))
            if pad is None:
                leftovers.append(chunk)
            else:
                add([*chunk, *pad], _Plan("screen", frozenset(chunk)))

        # Anchors whose every trial failed (beside a culprit) have no run of their own yet.
        unproven = [
            a
            for a in self._sorted(self.anchors)
            if a in state.cleared and not state.passes.get(a) and a not in busy
        ]
        pad = [a for a in anchors if a not in busy and a not in unproven][
            : max(0, self.min_nodes - len(unproven))
        ]
        if unproven and room() >= 1 and len(unproven) + len(pad) >= self.min_nodes:
            add([*unproven, *pad], _Plan("screen", frozenset(unproven)))

        self._combine(leftovers, state.pools, busy, room, add)
        return plans

    def _combine(self, leftovers, pools, busy, room, add) -> None:  # noqa: ANN001 - closures of _plan
        """Small parts nobody can pad: test parts of different pools together. A combination
        that holds a whole open pool would fail for sure, so it is never made."""
        buckets: list[list[str]] = []
        for part in leftovers:
            if room() < 1:
                return
            if set(part) & busy or any(set(part) & set(b) for b in buckets):
                continue
            for bucket in buckets:
                if not any(p <= frozenset(bucket + part) for p in pools):
                    bucket += part
                    break
            else:
                bucket = list(part)
                buckets.append(bucket)
            if len(bucket) >= self.min_nodes:
                add(bucket, _Plan("cross", frozenset(bucket)))
                buckets.remove(bucket)

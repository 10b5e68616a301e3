"""The node lifecycle state machine (DESIGN.md, idea 2).

    enrolled -> discovered -> provisioning -> provisioned -> configured -> burnin -> golden | failed
    failed -> repair -> burnin          (the nightly re-test of repaired nodes)
    any state -> retired

This module is pure: it knows which moves are legal and says why one is not. Recording a
transition (the event, the row lock) is the store's job.
"""

from __future__ import annotations

from enum import Enum


class State(str, Enum):
    ENROLLED = "enrolled"
    DISCOVERED = "discovered"
    PROVISIONING = "provisioning"
    PROVISIONED = "provisioned"
    CONFIGURED = "configured"
    BURNIN = "burnin"
    GOLDEN = "golden"
    FAILED = "failed"
    REPAIR = "repair"
    RETIRED = "retired"

    def __str__(self) -> str:
        return self.value


S = State

# Forward moves plus the ways back that operators need. Every state may also go to RETIRED.
_TRANSITIONS: dict[State, frozenset[State]] = {
    S.ENROLLED: frozenset({S.DISCOVERED}),
    # A discovered node may fail discovery-time checks (serial changed, BMC faults).
    S.DISCOVERED: frozenset({S.PROVISIONING, S.FAILED}),
    S.PROVISIONING: frozenset({S.PROVISIONED, S.FAILED}),
    # Re-imaging a provisioned or configured node goes back through provisioning (--force).
    S.PROVISIONED: frozenset({S.CONFIGURED, S.PROVISIONING, S.FAILED}),
    S.CONFIGURED: frozenset({S.BURNIN, S.PROVISIONING, S.FAILED}),
    S.BURNIN: frozenset({S.GOLDEN, S.FAILED}),
    # A golden node is re-tested (burnin), fails a later check, or ages out and waits for a
    # new burn-in (configured).
    S.GOLDEN: frozenset({S.BURNIN, S.FAILED, S.CONFIGURED, S.PROVISIONING}),
    S.FAILED: frozenset({S.REPAIR}),
    # After a repair the node is burnt in again; a board swap or re-image starts earlier, and a
    # node that failed configure (a mirror outage, a bad pin) is configured again.
    S.REPAIR: frozenset({S.BURNIN, S.CONFIGURED, S.PROVISIONING, S.DISCOVERED}),
    S.RETIRED: frozenset(),
}


class IllegalTransition(ValueError):
    """A transition the lifecycle does not allow; the message names node, state and move."""

    def __init__(self, node: str, current: State, target: State):
        self.node, self.current, self.target = node, current, target
        allowed = ", ".join(sorted(s.value for s in allowed_targets(current))) or "none"
        super().__init__(
            f"node {node}: illegal transition {current.value} -> {target.value} "
            f"(from {current.value} the allowed moves are: {allowed})"
        )


def parse_state(value: str | State) -> State:
    try:
        return State(value)
    except ValueError:
        names = ", ".join(s.value for s in State)
        raise ValueError(f"unknown node state {value!r} (states: {names})") from None


def allowed_targets(current: State) -> frozenset[State]:
    targets = _TRANSITIONS[current]
    return targets if current is S.RETIRED else targets | {S.RETIRED}


def is_allowed(current: State, target: State) -> bool:
    return target in allowed_targets(current)


def check_transition(node: str, current: State, target: State) -> None:
    """Raise IllegalTransition unless ``current -> target`` is a legal move."""
    if not is_allowed(current, target):
        raise IllegalTransition(node, current, target)

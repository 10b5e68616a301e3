"""The node lifecycle state machine (docs/design.md, idea 2).

    enrolled -> discovered -> provisioning -> provisioned -> configured -> burnin -> golden | failed
    failed -> repair -> burnin          (the nightly re-test of repaired nodes)
    any state -> retired

This module is pure: it knows which moves are legal and says why one is not. Recording a
transition (the event, the row lock) is the store's job.
"""

from __future__ import annotations

from enum import Enum

from bringup.core.errors import BadInput, UserError


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


class IllegalTransition(UserError, ValueError):
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
        raise BadInput(f"unknown node state {value!r} (states: {names})") from None


def allowed_targets(current: State) -> frozenset[State]:
    targets = _TRANSITIONS[current]
    return targets if current is S.RETIRED else targets | {S.RETIRED}


def is_allowed(current: State, target: State) -> bool:
    return target in allowed_targets(current)


def check_transition(node: str, current: State, target: State) -> None:
    """Raise IllegalTransition unless ``current -> target`` is a legal move."""
    if not is_allowed(current, target):
        raise IllegalTransition(node, current, target)


# -- the gate: which states each step may start from (docs/design.md, idea 8) ------------------------


class Step(str, Enum):
    """A command that works on nodes; the gate below says which nodes it may touch."""

    DISCOVER = "discover"
    PROVISION = "provision"
    CONFIGURE = "configure"
    BURNIN = "burnin"
    POWER = "power"
    BOOT = "boot"

    def __str__(self) -> str:
        return self.value


_LIVE = frozenset(State) - {S.RETIRED}

# The states a step starts from on its own. Provisioning resumes nodes an earlier run left in
# ``provisioning``; burn-in resumes nodes left in ``burnin``.
STARTS_FROM: dict[Step, frozenset[State]] = {
    Step.DISCOVER: _LIVE,  # reading a BMC changes nothing on the node
    Step.PROVISION: frozenset({S.DISCOVERED, S.PROVISIONING, S.REPAIR}),
    Step.CONFIGURE: frozenset({S.PROVISIONED, S.CONFIGURED, S.REPAIR}),
    Step.BURNIN: frozenset({S.CONFIGURED, S.BURNIN, S.REPAIR}),
    Step.POWER: _LIVE - {S.GOLDEN},
    Step.BOOT: _LIVE - {S.GOLDEN},
}

# The states a step may also start from with --force: a golden node is in service, and
# re-imaging a provisioned or configured node throws its work away.
FORCE_ALSO: dict[Step, frozenset[State]] = {
    Step.DISCOVER: frozenset(),
    Step.PROVISION: frozenset({S.PROVISIONED, S.CONFIGURED, S.GOLDEN}),
    Step.CONFIGURE: frozenset({S.GOLDEN}),
    Step.BURNIN: frozenset({S.GOLDEN}),
    Step.POWER: frozenset({S.GOLDEN}),
    Step.BOOT: frozenset({S.GOLDEN}),
}

# What to do about a node the gate refuses, by its state.
_HINTS: dict[State, str] = {
    S.ENROLLED: "not discovered yet: run `bringup discover` first",
    S.DISCOVERED: "not provisioned yet: run `bringup provision` first",
    S.PROVISIONING: "still provisioning: let `bringup provision` finish it",
    S.BURNIN: "in burn-in: let it finish (or fail) first",
    S.FAILED: "failed: fix it, then `bringup nodes mark-repaired NODE`",
    S.RETIRED: "retired: it has left the fleet",
}


def may_start(step: Step, state: State, force: bool = False) -> bool:
    return state in STARTS_FROM[step] or (force and state in FORCE_ALSO[step])


def gate_refusal(step: Step, state: State, force: bool = False) -> str | None:
    """Why ``step`` may not start on a node in ``state`` (None: it may), with what to do instead."""
    if may_start(step, state, force):
        return None
    if state in FORCE_ALSO[step]:
        what = "golden (in service)" if state is S.GOLDEN else f"already {state.value}"
        return f"{what}: pass --force to {step.value} it anyway"
    hint = _HINTS.get(state)
    allowed = ", ".join(sorted(s.value for s in STARTS_FROM[step]))
    return f"{state.value}: {hint}" if hint else f"{state.value}: {step.value} starts from {allowed}"

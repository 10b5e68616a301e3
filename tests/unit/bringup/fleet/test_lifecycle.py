import pytest
from hypothesis import given
from hypothesis import strategies as st

from bringup.fleet.lifecycle import (
    IllegalTransition,
    State,
    Step,
    allowed_targets,
    check_transition,
    gate_refusal,
    is_allowed,
    may_start,
)

HAPPY_PATH = ["enrolled", "discovered", "provisioning", "provisioned", "configured", "burnin", "golden"]


def test_happy_path_is_legal():
    for a, b in zip(HAPPY_PATH, HAPPY_PATH[1:], strict=False):
        check_transition("n1", State(a), State(b))


def test_repair_loop_is_legal():
    for a, b in [("burnin", "failed"), ("failed", "repair"), ("repair", "burnin")]:
        check_transition("n1", State(a), State(b))


@pytest.mark.parametrize("current", list(State))
def test_every_state_can_retire_except_retired(current):
    assert is_allowed(current, State.RETIRED) == (current is not State.RETIRED)


def test_retired_is_terminal():
    assert allowed_targets(State.RETIRED) == frozenset()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("enrolled", "golden"),
        ("configured", "golden"),
        ("failed", "burnin"),
        ("enrolled", "repair"),
        ("retired", "enrolled"),
        ("golden", "golden"),
    ],
)
def test_illegal_transition_names_node_state_and_move(a, b):
    with pytest.raises(IllegalTransition) as err:
        check_transition("gpu007", State(a), State(b))
    msg = str(err.value)
    assert "gpu007" in msg and f"{a} -> {b}" in msg


@given(st.sampled_from(list(State)), st.sampled_from(list(State)))
def test_check_agrees_with_table(a, b):
    if b in allowed_targets(a):
        check_transition("n", a, b)
    else:
        with pytest.raises(IllegalTransition):
            check_transition("n", a, b)


def test_golden_only_reachable_from_burnin():
    assert [s for s in State if State.GOLDEN in allowed_targets(s)] == [State.BURNIN]


# -- the gate --------------------------------------------------------------------------------

# The state each step moves a node into; None: the step moves nobody (it only reads or acts).
_STEP_TARGET = {
    Step.PROVISION: State.PROVISIONING,
    Step.CONFIGURE: State.CONFIGURED,
    Step.BURNIN: State.BURNIN,
}


@given(st.sampled_from(list(Step)), st.sampled_from(list(State)), st.booleans())
def test_gate_never_opens_onto_an_illegal_move(step, state, force):
    target = _STEP_TARGET.get(step)
    if target is not None and may_start(step, state, force) and state is not target:
        assert is_allowed(state, target), f"{step} may start from {state} but {state} -> {target} is illegal"


@given(st.sampled_from(list(Step)), st.sampled_from(list(State)))
def test_force_only_widens_the_gate(step, state):
    if may_start(step, state):
        assert may_start(step, state, force=True)


@pytest.mark.parametrize("step", [s for s in Step if s is not Step.DISCOVER])
def test_golden_needs_force_for_every_step_that_acts(step):
    assert not may_start(step, State.GOLDEN)
    assert may_start(step, State.GOLDEN, force=True)
    assert "--force" in gate_refusal(step, State.GOLDEN)


@pytest.mark.parametrize("step", list(Step))
def test_no_step_touches_a_retired_node(step):
    assert not may_start(step, State.RETIRED, force=True)
    assert "left the fleet" in gate_refusal(step, State.RETIRED, force=True)


def test_refusal_says_what_to_do():
    assert "mark-repaired" in gate_refusal(Step.BURNIN, State.FAILED)
    assert "bringup provision" in gate_refusal(Step.CONFIGURE, State.DISCOVERED)
    assert gate_refusal(Step.CONFIGURE, State.PROVISIONED) is None

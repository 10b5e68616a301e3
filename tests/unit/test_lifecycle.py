import pytest
from hypothesis import given
from hypothesis import strategies as st

from bringup.fleet.lifecycle import IllegalTransition, State, allowed_targets, check_transition, is_allowed

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

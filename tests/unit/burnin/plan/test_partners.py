"""The choice of partners the nightly and the acceptance share (pure)."""

from __future__ import annotations

from burnin.plan.partners import Candidate, choose_partners, partner_count


def test_partners_are_of_each_tested_profile_in_the_callers_order_and_never_a_tested_node():
    tested = [Candidate("t1", "a"), Candidate("t2", "b")]
    candidates = [Candidate("t1", "a"), Candidate("g2", "a"), Candidate("g1", "a"), Candidate("g3", "a")]
    choice = choose_partners(tested, candidates + [Candidate("h1", "b")], noun="partner")
    assert choice.chosen == ["g2", "g1", "h1"]
    assert choice.short == {"b": (1, 2)}
    assert choice.notes == ["profile b: 1 partner free of the 2 wanted for t2"]


def test_a_cap_bounds_the_partners_per_profile():
    choice = choose_partners([Candidate("t1")], [Candidate("g1"), Candidate("g2")], cap=1)
    assert choice.chosen == ["g1"] and not choice.notes
    assert partner_count(3) == 3 and partner_count(1) == 2 and partner_count(5, 1) == 1

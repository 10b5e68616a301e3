"""gc_paused (burnin/parsers/_common.py): the collector is off while a parser builds its records, and
as it was afterwards, whatever happens inside."""

from __future__ import annotations

import gc

import pytest

from burnin.parsers._common import gc_paused


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_is_back_on_after_an_error() -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a parser's bug")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

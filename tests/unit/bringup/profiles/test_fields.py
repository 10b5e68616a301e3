"""The strict field types: a wrong type or range is an error in the project's words, never coerced."""

from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from bringup.profiles.fields import Fraction, PositiveInt, Section, Str, StrList


class _Sample(Section):
    count: PositiveInt = 1
    share: Fraction = 0.5
    name: Str = "x"
    tags: StrList = Field(default_factory=list)


@pytest.mark.parametrize(
    "data, words",
    [
        ({"count": True}, "must be int, got bool True"),
        ({"count": "8"}, "must be int, got str '8'"),
        ({"count": 0}, "must be positive, got 0"),
        ({"share": 1.5}, "is a fraction and must be in (0, 1], got 1.5"),
        ({"tags": "a"}, "must be list, got str 'a'"),
        ({"bogus": 1}, "Extra inputs are not permitted"),
    ],
)
def test_a_wrong_value_is_an_error_in_the_projects_words(data, words):
    with pytest.raises(ValidationError) as err:
        _Sample(**data)
    assert words in str(err.value)


def test_a_null_means_unset_and_takes_the_default():
    assert _Sample(count=None, name=None).model_dump() == {"count": 1, "share": 0.5, "name": "x", "tags": ()}

"""Placeholder serials (bringup/redfish/placeholders.py): never a key, each with its source."""

from __future__ import annotations

import pytest

from bringup.redfish.placeholders import PLACEHOLDERS, placeholder_reason, real_serial


@pytest.mark.parametrize(
    "value",
    [
        "01234567890123456789AB",  # AMI MegaRAC's default chassis serial
        "To Be Filled By O.E.M.",
        "default string",
        " 0123456789 ",
        "00000000000000",
        "....................",
        "FFFFFFFF",
        "",
        None,
    ],
)
def test_placeholders_are_not_serials(value):
    assert real_serial(value) is None and placeholder_reason(value)


@pytest.mark.parametrize("value", ["GJG9NF512A000302", "MXQ019020B", "PR1237879N", "0123456789AB"])
def test_real_serials_are_kept_stripped(value):
    assert real_serial(f" {value} ") == value and placeholder_reason(value) is None


def test_every_placeholder_names_where_it_is_seen():
    assert all(why.strip() for _, why in PLACEHOLDERS)
    assert "AMI" in placeholder_reason("01234567890123456789ab")

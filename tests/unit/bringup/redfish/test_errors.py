"""Redfish error messages never carry a secret."""

from __future__ import annotations

from bringup.redfish.errors import redact


def test_redact():
    assert redact("user root password hunter22 rejected", ["hunter22"]) == "user root password *** rejected"
    assert redact("abc", [None, ""]) == "abc"

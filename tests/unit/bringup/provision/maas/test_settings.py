"""The MAAS rack variables, checked all at once, secrets never echoed."""

from __future__ import annotations

import pytest

from bringup.provision.maas import settings_from_vars


def test_rack_vars_are_checked_all_at_once(tmp_path):
    settings, problems = settings_from_vars(
        {"maas_api_key": "abc:def:ghi", "maas_tags": ["ok", "bad tag"], "maas_poll_interval_s": "soon"},
        tmp_path,
    )
    assert settings is None
    text = "\n".join(problems)
    assert (
        "maas_url" in text and "plaintext" in text and "'bad tag'" in text and "maas_poll_interval_s" in text
    )
    assert "abc:def:ghi" not in text


@pytest.mark.parametrize(
    "url",
    ["http://maas.example:5240/MAAS\nAuthorization: x", "http://maas.example:5240/MA AS", "http://\x1b[2J"],
)
def test_a_maas_url_with_a_control_character_or_space_is_refused(tmp_path, url):
    # The old check matched only a prefix, so anything after the host went through.
    settings, problems = settings_from_vars({"maas_url": url, "maas_api_key": "env:MAAS_KEY"}, tmp_path)
    assert settings is None
    assert any(p.startswith("maas_url") for p in problems), problems

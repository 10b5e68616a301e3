"""`--profile PATH` that does not exist: the error names the path given. Before the fix it named
`/nonexistent.yml.yml` (the path taken for a name, with '.yml' added)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.profiles.load import ProfileError, find_profile
from burnin.cli import main as burnin_main
from tests.paths import REPO

PROFILES = REPO / "inventories" / "profiles"


@pytest.mark.parametrize("given", ["/nonexistent.yml", "/nonexistent.yaml", "profiles/nope.yml", "./x/y"])
def test_a_missing_profile_path_is_named_as_given(given):
    with pytest.raises(ProfileError) as caught:
        find_profile(given, PROFILES)
    message = str(caught.value)
    assert given in message and f"{given}.yml" not in message, message
    assert "no such profile file" in message


def test_an_unknown_profile_name_still_lists_the_profiles():
    with pytest.raises(ProfileError, match="unknown profile 'nope'.*h100-sxm-8x400g"):
        find_profile("nope", PROFILES)


def test_a_profile_path_that_exists_loads(tmp_path: Path):
    assert find_profile(str(PROFILES / "h100-sxm-8x400g.yml"), tmp_path).name == "h100-sxm-8x400g"


def test_the_command_line_names_the_path(tmp_path: Path):
    (tmp_path / "out.txt").write_text("hello\n")
    res = CliRunner().invoke(
        burnin_main, ["evaluate", "--profile", "/nonexistent.yml", str(tmp_path / "out.txt")]
    )
    assert "/nonexistent.yml.yml" not in res.output and "/nonexistent.yml" in res.output, res.output
    assert res.exit_code in (1, 2) and "internal error" not in res.output

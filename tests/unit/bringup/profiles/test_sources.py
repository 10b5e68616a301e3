"""Every figure of every shipped profile names its public source (bringup/profiles/sources.py), and
the rule catches a figure without one."""

from __future__ import annotations

import re

import pytest

from bringup.profiles.load import load_profile
from bringup.profiles.sources import source_entries, unsourced_figures
from tests.paths import REPO

PROFILES = sorted((REPO / "inventories" / "profiles").glob("*.yml"))
H100 = (REPO / "inventories" / "profiles" / "h100-sxm-8x400g.yml").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_every_figure_of_a_shipped_profile_cites_its_source(path):
    text = path.read_text(encoding="utf-8")
    assert [str(p) for p in unsourced_figures(text)] == []
    assert source_entries(text), "a profile lists its sources"
    for page in set(re.findall(r"\bdocs/[\w./-]+\.md\b", text)):
        assert (REPO / page).is_file(), f"{path.name} cites {page}, which does not exist"


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_every_shipped_profile_is_valid(path):
    profile, problems = load_profile(path.stem, path.parent)
    assert problems == [] and profile is not None


def test_a_figure_without_a_source_fails():
    line = next(x for x in H100.splitlines() if x.strip().startswith("rate_gbps:"))
    bare = line.split("#")[0].rstrip()
    problems = unsourced_figures(H100.replace(line, bare))
    assert [(p.field, p.message.split(":")[0]) for p in problems] == [("ib.rate_gbps", "no source")]
    # A comment that only explains, naming no source, is not a source either.
    problems = unsourced_figures(H100.replace(line, bare + "  # NDR runs at 400"))
    assert [p.field for p in problems] == ["ib.rate_gbps"]


def test_a_citation_of_a_source_the_block_lacks_fails():
    used = "legacy PXE is not offered [dgx-h100]"
    problems = unsourced_figures(H100.replace(used, used.replace("h100", "h1oo")))
    assert [(p.field, p.message) for p in problems if p.message.startswith("cites")] == [
        ("boot_mode", "cites [dgx-h1oo], which the sources block lacks")
    ]


def test_a_comment_above_the_figure_cites_for_it_and_labels_need_none():
    text = (
        "#   [spec] https://example.com/datasheet the vendor's datasheet\n"
        "name: x\ndescription: y\ngpu:\n  # 8 modules on the baseboard [spec]\n  count: 8\n"
        "  memory_gib: 80  # https://example.com/other\n  nvswitch: true  # docs/burnin.md\n"
    )
    assert unsourced_figures(text) == []
    assert [p.field for p in unsourced_figures(text.replace("[spec]\n", "\n"))] == ["gpu.count"]


def test_a_sources_entry_without_a_url_fails():
    text = "#   [spec] the vendor's datasheet\nname: x\ncount: 8  # [spec]\n"
    assert [p.field for p in unsourced_figures(text)] == ["[spec]"]

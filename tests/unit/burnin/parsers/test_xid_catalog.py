"""The Xid catalog: every Xid NVIDIA lists, version-stamped, each with NVIDIA's resolution and the
verdict one documented rule gives it (burnin/parsers/xid_catalog.py)."""

from __future__ import annotations

import re

import pytest

from burnin.parsers import xid_catalog
from burnin.parsers.xid_catalog import CATALOG_SOURCE, CATALOG_VERSION, OVERRIDES, XID_CATALOG
from burnin.result import Action, Severity
from tests.paths import REPO, SAMPLES

UPSTREAM = REPO / "burnin" / "parsers" / "data" / "upstream" / "gpud_xid_catalog_generated.go.txt"
SHIPPED = REPO / "burnin" / "parsers" / "data" / "xid_catalog.tsv"
REGENERATE = f"python -m burnin.parsers.xid_catalog --regenerate {UPSTREAM.relative_to(REPO)} > {SHIPPED.relative_to(REPO)}"


def upstream_codes(text: str) -> set[int]:
    """The Xids the saved upstream table lists, read without the module's parser."""
    return {int(n) for n in re.findall(r"\{Code: (\d+),", text)}


def test_every_xid_nvidia_lists_is_in_the_catalog():
    listed = upstream_codes(UPSTREAM.read_text())
    assert listed == set(range(1, 173))  # NVIDIA's sheet numbers every Xid from 1 to 172
    assert set(XID_CATALOG) == listed


def test_the_catalog_agrees_with_the_hand_transcribed_excerpt():
    """An independent reading of the same catalog (the sample of selected rows): the same
    mnemonic and immediate resolution for every row it has."""
    rows = re.findall(
        r"^\| (\d+) \| ([^|]+) \| [^|]+ \| ([^|]+) \|",
        (SAMPLES / "xid_catalog_nvidia_selected.md").read_text(),
        re.M,
    )
    assert len(rows) >= 40
    for xid, mnemonic, bucket in rows:
        info = XID_CATALOG[int(xid)]
        assert (info.mnemonic, info.bucket) == (mnemonic.strip(), bucket.strip()), xid


def test_each_xid_maps_to_an_action_and_is_a_finding():
    for xid, info in XID_CATALOG.items():
        assert isinstance(info.action, Action) and isinstance(info.severity, Severity), xid
        assert info.severity in (Severity.WARNING, Severity.CRITICAL), xid  # never INFO: an Xid is seen
        assert info.advice, xid
        assert info.rule in ("bucket", "floor") or info.rule.startswith("override: "), xid


@pytest.mark.parametrize(
    ("xid", "severity", "action", "app_error"),
    [
        (13, Severity.WARNING, Action.MONITOR, True),  # RESTART_APP, WORKFLOW_XID_13
        (31, Severity.WARNING, Action.MONITOR, True),
        (43, Severity.WARNING, Action.MONITOR, True),  # IGNORE; an application's fault (override)
        (45, Severity.WARNING, Action.MONITOR, True),  # WORKFLOW_XID_45: follow the other Xid
        (32, Severity.WARNING, Action.MONITOR, False),  # CHECK_APP/CUDA, but PCIe quality (override)
        (94, Severity.WARNING, Action.MONITOR, False),  # RESTART_APP: a contained memory error
        (46, Severity.CRITICAL, Action.RESET_GPU, False),  # RESET_GPU
        (48, Severity.CRITICAL, Action.RESET_GPU, False),  # WORKFLOW_XID_48
        (54, Severity.CRITICAL, Action.RESEAT, False),  # CHECK_MECHANICALS
        (61, Severity.CRITICAL, Action.RMA, False),  # CONTACT_SUPPORT
        (63, Severity.WARNING, Action.MONITOR, False),  # IGNORE
        (64, Severity.CRITICAL, Action.RMA, False),  # RESET_GPU, RMA by override
        (74, Severity.CRITICAL, Action.RESET_GPU, False),  # WORKFLOW_NVLINK_ERR
        (78, Severity.CRITICAL, Action.UPDATE_FIRMWARE, False),  # UPDATE_SWFW
        (79, Severity.CRITICAL, Action.REBOOT, False),  # RESTART_BM
        (149, Severity.CRITICAL, Action.RESET_GPU, False),  # WORKFLOW_NVLINK5_ERR
        (151, Severity.CRITICAL, Action.REBOOT, False),  # RESTART_VM
        (154, Severity.WARNING, Action.MONITOR, False),  # XID_154
        (159, Severity.WARNING, Action.RECONFIGURE, False),  # CHECK_UVM
        (162, Severity.WARNING, Action.MONITOR, False),  # no resolution in the catalog
        (171, Severity.CRITICAL, Action.RESET_GPU, False),  # no resolution; Xid 48's detail (override)
    ],
)
def test_the_rule_maps_nvidia_resolutions(xid, severity, action, app_error):
    info = XID_CATALOG[xid]
    assert (info.severity, info.action, info.app_error) == (severity, action, app_error)


def test_the_overrides_name_their_source_and_show_in_the_table():
    assert OVERRIDES
    for xid, override in OVERRIDES.items():
        assert "https://" in override.why, xid
        assert XID_CATALOG[xid].rule == f"override: {override.why}", xid
    assert {x for x, i in XID_CATALOG.items() if i.rule.startswith("override: ")} == set(OVERRIDES)


def test_an_xid_nvidia_escalates_to_support_fails_a_node_under_test():
    """The floor: restart-the-application now, but support investigates (the hardware is suspect)."""
    floored = {x for x, i in XID_CATALOG.items() if i.rule == "floor"}
    assert floored and all(XID_CATALOG[x].investigatory == "CONTACT_SUPPORT" for x in floored)
    for x in floored:
        info = XID_CATALOG[x]
        assert (info.severity, info.action, info.app_error) == (Severity.CRITICAL, Action.REBOOT, False), x
    # what NVIDIA calls the application's fault stays a warning, whatever the investigation
    assert all(
        i.severity is Severity.WARNING for i in XID_CATALOG.values() if i.app_error and i.rule != "floor"
    )
    assert {68, 96, 105} <= floored  # video engine and memory errors the older, shorter list failed too


def test_the_catalog_is_version_stamped():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", CATALOG_VERSION)
    assert CATALOG_SOURCE == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    header = [line for line in SHIPPED.read_text().splitlines() if line.startswith("#")]
    assert f"# VERSION: {CATALOG_VERSION}" in [line.split(" (")[0] for line in header]
    assert any(line.startswith(f"# SOURCE: {CATALOG_SOURCE}") for line in header)
    assert any("Apache-2.0" in line and "Copyright 2024 Lepton AI Inc" in line for line in header)


def test_the_shipped_table_is_what_the_saved_upstream_copy_makes():
    assert SHIPPED.read_text() == xid_catalog.regenerate(UPSTREAM.read_text()), f"stale: run `{REGENERATE}`"


def test_the_regenerate_command_prints_the_table(capsys):
    assert xid_catalog.main(["--regenerate", str(UPSTREAM)]) == 0
    assert capsys.readouterr().out == SHIPPED.read_text()
    assert xid_catalog.main([]) == 2


def test_an_upstream_copy_without_its_stamp_is_refused():
    text = UPSTREAM.read_text()
    with pytest.raises(ValueError, match="Generated at"):
        xid_catalog.regenerate(text.replace("// Generated at", "// Made at"))
    with pytest.raises(ValueError, match="SOURCE"):
        xid_catalog.regenerate(text.replace("// SOURCE:", "// FROM:"))


def test_an_unreadable_or_repeated_upstream_row_is_refused():
    text = UPSTREAM.read_text()
    with pytest.raises(ValueError, match="cannot read"):
        xid_catalog.regenerate(text.replace("{Code: 79, Mnemonic:", "{Code: 79, Name:"))
    with pytest.raises(ValueError, match="Xid 80 twice"):
        xid_catalog.regenerate(text.replace("{Code: 79,", "{Code: 80,"))


def test_a_resolution_the_rule_does_not_know_is_refused():
    text = UPSTREAM.read_text().replace(
        'ImmediateResolution: "CHECK_UVM"', 'ImmediateResolution: "NEW_BUCKET"'
    )
    with pytest.raises(ValueError, match="NEW_BUCKET"):
        xid_catalog.regenerate(text)


def test_an_override_of_an_xid_nvidia_does_not_list_is_refused(monkeypatch):
    monkeypatch.setitem(OVERRIDES, 999, OVERRIDES[64])
    with pytest.raises(ValueError, match="999"):
        xid_catalog.regenerate(UPSTREAM.read_text())


def test_a_row_with_an_action_the_product_lacks_is_refused():
    lines = SHIPPED.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("79\t"))
    fields = lines[at].split("\t")
    fields[xid_catalog.COLUMNS.index("action")] = "RESET_NODE"
    lines[at] = "\t".join(fields)
    with pytest.raises(ValueError, match="RESET_NODE"):
        xid_catalog.load("".join(lines))


def test_the_printed_severity_judges_only_its_buckets_and_names_its_source():
    from burnin.parsers.xid_catalog import PRINTED_SEVERITY, judged

    for bucket, printed in PRINTED_SEVERITY.items():
        assert "https://" in printed.why, bucket
        assert any(i.bucket == bucket for i in XID_CATALOG.values()), bucket
    nvlink5 = [x for x, i in XID_CATALOG.items() if i.bucket == "WORKFLOW_NVLINK5_ERR"]
    assert nvlink5 == list(range(144, 151))
    for xid in nvlink5:
        assert (judged(xid, False).severity, judged(xid, False).action) == (Severity.WARNING, Action.MONITOR)
        assert (judged(xid, True).severity, judged(xid, True).action) == (Severity.CRITICAL, Action.RESET_GPU)
        assert judged(xid, None) == XID_CATALOG[xid]
        cut = judged(xid, None, may_be_cut=True)  # a last line that ends before the word
        assert (cut.severity, cut.action) == (Severity.WARNING, Action.MONITOR)
    assert judged(79, False) == XID_CATALOG[79]  # the word counts only where the bucket says so
    assert judged(999, True) is None

"""Every export with each name a format cannot carry: escaped where the format can (CSV, JSON,
comments, the excluded text), refused with one line naming the node where it cannot (hostfile,
Slurm hostlist), never an internal error. Before the fix the Slurm export ended in "internal
error: ValueError", the hostfile got `n03 slots=999 slots=8` and the CSV `=HYPERLINK(...)`."""

from __future__ import annotations

import csv
import io
import json
import shlex
from types import SimpleNamespace

import pytest

from bringup.core.csvcell import formula_like
from bringup.core.errors import UserError
from bringup.core.hostnames import address_problem
from burnin.golden import export
from burnin.golden.export import expand_hostlist
from burnin.golden.rules import Decision, GoldenRules, NodeFacts
from tests.fleet import walk_to
from tests.unit.bringup.core.test_hostnames import BAD_NAMES
from tests.unit.burnin.golden.test_export import _records
from tests.unit.burnin.golden.test_rules import RACK, FleetRack

NAMES = [n for n in BAD_NAMES if n] + ['=HYPERLINK("http://evil.example","x")', "@SUM(1)", "+1", "a\tb"]
CASES = [(fmt, excluded) for fmt in export.FORMATS for excluded in (False, True)]


def _bad_records(name: str):
    meta, golden, excluded = _records()
    golden = {**golden, "name": name, "address": name, "hostname": name, "serial": name}
    excluded = {**excluded, "name": name, "serial": name, "reasons": [f"=cmd|' /C calc'!A0 {name}"]}
    return meta, golden, excluded


def _body(text: str) -> list[str]:
    return [x for x in text.splitlines() if not x.startswith("#")]


def _csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO("".join(x + "\n" for x in _body(text)))))


def check_export(fmt: str, want_excluded: bool, text: str, names: list[str]) -> None:
    """What each format must hold when it did not refuse: what was written reads back as written."""
    if fmt == "json":
        doc = json.loads(text)
        assert [n["name"] for n in doc["nodes"] + doc["excluded"]] == names
    elif fmt == "csv":
        rows = _csv_rows(text)
        width = len(export.CSV_EXCLUDED_COLUMNS if want_excluded else export.CSV_COLUMNS)
        assert all(len(r) == width for r in rows), rows
        cells = [c for r in rows[1:] for c in r]
        assert not [c for c in cells if formula_like(c)], cells
    elif fmt == "slurm":
        (hostlist,) = _body(text) or [""]
        assert sorted(expand_hostlist(hostlist)) == sorted(names)
    elif fmt == "topology-block":  # block lines only; the excluded nodes only as '#' lines
        body = _body(text)
        assert all(x.startswith("BlockName=") for x in body) and not (want_excluded and body), text
    elif want_excluded:  # the excluded nodes for people: one line each, three tab-separated fields
        lines = _body(text)
        assert len(lines) == len(names) and all(len(x.split("\t")) == 3 for x in lines), lines
    else:  # an OpenMPI hostfile: ADDRESS slots=N, nothing else on the line
        for line in _body(text):
            address, slots = line.split(" ")
            assert slots.startswith("slots=") and address_problem(address) is None


@pytest.mark.parametrize("name", NAMES, ids=range(len(NAMES)))
@pytest.mark.parametrize(("fmt", "want_excluded"), CASES)
def test_each_bad_name_through_each_export(name, fmt, want_excluded):
    meta, golden, excluded = _bad_records(name)
    try:
        text = export.render(fmt, meta, [golden], [excluded], want_excluded)
    except UserError as exc:
        message = str(exc)
        assert "\n" not in message and repr(name) in message, message
        assert fmt in ("hostfile", "slurm", "topology-block"), (
            f"{fmt} can carry any text, yet refused: {message}"
        )
        return
    names = [name, name] if fmt == "json" else [name] if want_excluded or fmt == "slurm" else []
    check_export(fmt, want_excluded, text, names)


def test_the_json_command_to_show_a_node_is_one_that_runs():
    """A name from the store with a space or a ';' stays one argument of the command shown."""
    for name in ("n03 slots=999", "a;rm -rf /", "gpu001"):
        node = SimpleNamespace(
            serial=None,
            ip=None,
            hostname=None,
            rack="r",
            rack_unit=1,
            profile="p",
            state="golden",
            hardware={},
        )
        fact = NodeFacts(name, node, None, {}, [])
        decision = Decision(name, "golden", True, ())
        record = export.golden_record(fact, decision, GoldenRules(), "s", hardware=False)
        assert shlex.split(record["evidence"]["show"]) == ["burnin", "results", name]


def test_the_hostfile_refuses_what_is_no_address():
    meta, golden, excluded = _records()
    golden = {**golden, "address": "n03 slots=999"}
    with pytest.raises(UserError, match=r"node 'gpu001'.*hostfile.*'n03 slots=999'"):
        export.render("hostfile", meta, [golden], [])


def test_slurm_refuses_with_the_node_and_what_to_do():
    meta, golden, excluded = _records()
    with pytest.raises(UserError, match=r"'a,b'.*Slurm.*retire"):
        export.render("slurm", meta, [{**golden, "name": "a,b"}], [])


# ---- the command line: names that reached the store by an older inventory ---------------------


@pytest.fixture
def fleet(tmp_path) -> FleetRack:
    fleet = FleetRack(tmp_path)
    fleet.results("gpu001")
    for name in NAMES:  # enrolled when the inventory said so; no longer in it
        fleet.store.enroll(name, RACK, "h100-sxm-8x400g")
        walk_to(fleet.store, name, "burnin")
    return fleet


@pytest.mark.parametrize(("fmt", "want_excluded"), CASES)
def test_cli_export_of_a_store_holding_bad_names(fleet, fmt, want_excluded):
    res = fleet.run("golden", "--rack", RACK, "--format", fmt, *(["--excluded"] if want_excluded else []))
    assert "internal error" not in res.output and res.exit_code in (0, 1), res.output
    if res.exit_code == 1:  # refused: one line naming a node
        assert fmt == "slurm" and want_excluded, res.output
        (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
        assert "cannot go into a Slurm hostlist" in line
        return
    names = sorted(NAMES + ["gpu002", "gpu003", "gpu004"]) if want_excluded else []
    if fmt == "json":
        doc = json.loads(res.stdout)
        assert sorted(e["name"] for e in doc["excluded"]) == sorted(NAMES + ["gpu002", "gpu003", "gpu004"])
    elif fmt == "csv" and want_excluded:
        rows = _csv_rows(res.stdout)
        assert len(rows) == len(names) + 1
        assert not [c for r in rows[1:] for c in r if formula_like(c)]
    elif fmt == "hostfile" and want_excluded:
        assert len(_body(res.stdout)) == len(names)
    else:
        check_export(fmt, want_excluded, res.stdout, ["gpu001"] if fmt == "slurm" else [])


def test_cli_hostfile_with_a_hostname_the_store_holds(fleet):
    """A node's host name as provisioning recorded it goes into the hostfile with --address hostname."""
    fleet.run("golden", "--rack", RACK)  # gpu001 -> golden
    fleet.store.update_node("gpu001", hostname="n03 slots=999")
    res = fleet.run("golden", "--rack", RACK, "--address", "hostname")
    assert res.exit_code == 1 and "internal error" not in res.output, res.output
    assert "slots=999 slots" not in res.stdout
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert "'gpu001'" in line and "'n03 slots=999'" in line and "hostfile" in line

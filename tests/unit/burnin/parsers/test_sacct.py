"""sacct --parsable2 job records and sacctmgr node events, on real Slurm 22.05 captures from the
lab's slurmdbd (tests/fixtures/slurm-capture.md), and the hostlists they print."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.sacct import expand_hostlist, parse_node_events, parse_sacct
from tests.unit.burnin.parsers._samples import load

JOBS = "slurm_22_05_sacct_parsable2_node_fail_requeued.txt"
EVENTS = "slurm_22_05_sacctmgr_list_event_node_down.txt"


def test_every_run_of_every_job_with_its_state_and_nodes():
    jobs = parse_sacct(load(JOBS))
    assert [(j.job_id, j.state, j.nodes) for j in jobs] == [
        ("1", "COMPLETED", ("node01",)),
        ("2", "FAILED", ("node02",)),
        ("3", "COMPLETED", ("node01", "node02")),
        ("4", "NODE_FAIL", ("node03",)),  # node set DOWN under it, then requeued ...
        ("4", "CANCELLED", ()),  # ... and its second run cancelled while pending ("None assigned")
        ("5", "NODE_FAIL", ("node03",)),  # slurmd killed under it: NODE_FAIL 43 s later
        ("6", "REQUEUED", ("node01", "node02")),  # scontrol requeue
        ("6", "CANCELLED", ()),
        ("7", "NODE_FAIL", ("node01", "node02", "node03")),  # a 3-node job; node02 went down
        ("8", "FAILED", ("node01", "node02")),
        ("10", "CANCELLED", ("node02",)),
        ("9_1", "FAILED", ("node03",)),
        ("9_2", "FAILED", ("node01",)),
    ]


def test_the_fields_of_one_record():
    jobs = parse_sacct(load(JOBS))
    dies = next(j for j in jobs if j.job_id == "5")
    assert dies.name == "dies" and dies.partition == "p27fx" and dies.alloc_nodes == 1
    assert dies.start == datetime(2026, 11, 24, 9, 35, 31) and dies.end == datetime(2026, 11, 24, 9, 36, 14)
    assert dies.elapsed == timedelta(seconds=43) and (dies.exit_code, dies.signal) == (0, 0)
    failed = next(j for j in jobs if j.job_id == "8")
    assert (failed.exit_code, failed.signal) == (127, 0)
    pending = next(j for j in jobs if j.job_id == "4" and j.state == "CANCELLED")
    assert pending.start is None and pending.cancelled_by == 0 and pending.alloc_nodes == 1
    task = next(j for j in jobs if j.job_id == "9_1")
    assert task.raw_id == "11" and task.reason == ""
    assert next(j for j in jobs if j.job_id == "4").reason == "ReqNodeNotAvail"


def test_columns_are_found_by_their_header_in_any_order():
    text = "State|NodeList|JobID|End\nNODE_FAIL|gpu[001-002]|77|2026-01-02T03:04:05\n"
    (job,) = parse_sacct(text)
    assert (job.job_id, job.state, job.nodes, job.start) == ("77", "NODE_FAIL", ("gpu001", "gpu002"), None)


def test_node_events_say_which_node_went_down_and_when():
    events = parse_node_events(load(EVENTS))
    assert [(e.node, e.state, e.reason) for e in events] == [
        ("node02", "DOWN", "p27f-multi"),
        ("node03", "DOWN", "p27f-test"),
        ("node03", "DOWN", "p27f-test"),
        ("node03", "DOWN*", "Not responding"),
        ("node03", "DOWN*", "Not responding"),
    ]
    assert events[0].start == datetime(2026, 11, 24, 9, 36, 30) and events[0].user == "root"
    ongoing = parse_node_events(
        "NodeName|TimeStart|TimeEnd|State|Reason|User\nn1|2026-01-01T00:00:00|Unknown|DRAIN|x|root(0)\n"
    )
    assert ongoing[0].end is None
    cluster = "NodeName|TimeStart|TimeEnd|State|Reason|User\n|2026-11-24T09:30:13|Unknown||Cluster Registered TRES|\n"
    assert parse_node_events(cluster) == []


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("node01", ("node01",)),
        ("node[01-03,07],gpu9", ("node01", "node02", "node03", "node07", "gpu9")),
        ("gpu[8-10]", ("gpu8", "gpu9", "gpu10")),
        ("rack1-n[098-100]-ib", ("rack1-n098-ib", "rack1-n099-ib", "rack1-n100-ib")),
        ("None assigned", ()),
        ("", ()),
    ],
)
def test_hostlists(text, hosts):
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["node[01-", "node[3-1]", "node[a-b]", "node]1[", "no de1", "n[0-99999999]"])
def test_a_hostlist_that_is_not_one_is_an_error(text):
    with pytest.raises(ParseError):
        expand_hostlist(text)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1|COMPLETED|node01|2026-11-24T09:30:19\n", "header"),  # --noheader: columns unknown
        ("JobID|State|End\n1|FAILED|2026-11-24T09:30:19\n", "NodeList"),
        ("JobID|State|NodeList|End\n1|FAILED|node01\n", "3 '|'-separated fields"),
        ("JobID|State|NodeList|End\n1|failed|node01|2026-11-24T09:30:19\n", "job state"),
        ("JobID|State|NodeList|End\n1|FAILED|node01|yesterday\n", "Slurm time"),
        ("JobID|State|NodeList|End\nabc|FAILED|node01|Unknown\n", "job id"),
    ],
)
def test_what_sacct_never_prints_is_an_error_naming_it(text, says):
    with pytest.raises(ParseError, match=says):
        parse_sacct(text)


def test_no_jobs_in_the_window_is_an_empty_list():
    assert parse_sacct("") == [] and parse_sacct("JobID|State|NodeList|End\n") == []


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(load(JOBS).splitlines() + load(EVENTS).splitlines() + ["|", "[", "]", "-", "x"]),
        max_size=8,
    ),
    st.text(max_size=20),
)
def test_mangled_output_is_records_or_a_parse_error_never_a_crash(lines, noise):
    for parse in (parse_sacct, parse_node_events):
        try:
            parse("\n".join(lines) + noise)
        except ParseError as exc:
            assert not exc.internal, exc

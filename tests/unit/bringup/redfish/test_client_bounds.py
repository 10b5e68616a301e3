"""The client's own bounds (docs/redfish.md, "Bounds"): nesting checked without recursion, a
Redfish error in a 200 refused for reads only, a node deadline that no retry outlives, and the
limits' validation. The probes against real hostile servers: test_fanout_hostile_bmcs.py."""

from __future__ import annotations

import pytest

from bringup.core.errors import BadInput
from bringup.redfish.client import RedfishClient, nested_deeper
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import DeadlineExceeded, UnexpectedResponse
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "Q9-secret-bmc-pw"
RESET = "/redfish/v1/Systems/System.Embedded.1/Actions/ComputerSystem.Reset"


def nest(levels: int) -> dict:
    doc: dict = {"leaf": 1}
    for _ in range(levels - 1):
        doc = {"a": doc}
    return doc


def test_nesting_is_measured_in_levels_of_objects_and_arrays():
    assert not nested_deeper(nest(64), 64) and nested_deeper(nest(65), 64)
    assert nested_deeper({"a": [[[1]]]}, 3) and not nested_deeper({"a": [[[1]]]}, 4)
    assert not nested_deeper({"a": [], "b": {}}, 1)  # empty containers add no level
    assert nested_deeper(nest(50_000), 64)  # no recursion: no RecursionError either


def client(bmc: FakeBmc, **kw) -> RedfishClient:
    options = TransportOptions(
        **{"connect_timeout": 1, "read_timeout": 1, "retries": 3, "backoff": 0.01, **kw}
    )
    c = RedfishClient(BmcEndpoint("node07", bmc.url, "root", PASSWORD), options, sleep=lambda _s: None)
    c.connect()
    return c


def test_a_redfish_error_in_a_200_is_refused_for_a_read_but_not_for_an_action():
    # An action's 200 may carry messages its vendor module reads (docs/redfish.md, "Dell iDRAC").
    bmc = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    bmc.statuses["/redfish/v1/Chassis"] = 200  # answered with a Redfish error body
    bmc.statuses[RESET] = 200
    with serving(bmc):
        c = client(bmc)
        with pytest.raises(
            UnexpectedResponse, match=r"GET /redfish/v1/Chassis answered HTTP 200 with a Redfish error.*OK at"
        ):
            c.get("/redfish/v1/Chassis")
        assert c.post(RESET, {"ResetType": "On"}).status == 200
        c.close()


def test_a_node_past_its_deadline_makes_no_more_requests():
    bmc = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    with serving(bmc):
        c = client(bmc, node_deadline=30)
        c._node_deadline = 0.0  # as if 30 s had gone by
        before = len(bmc.requests)
        with pytest.raises(
            DeadlineExceeded, match=r"within 30 s \(--node-deadline\); it was at GET /redfish/v1/Chassis"
        ):
            c.get("/redfish/v1/Chassis")
        assert len(bmc.requests) == before
        c.close()


def test_a_retry_that_could_not_start_before_the_node_deadline_is_not_waited_for():
    bmc = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    bmc.hang.add("/redfish/v1/Chassis")  # a 1 s read timeout, then a retry 8 s later: past the deadline
    with serving(bmc):
        c = client(bmc, node_deadline=5, backoff=8)
        with pytest.raises(DeadlineExceeded, match="--node-deadline"):
            c.get("/redfish/v1/Chassis")
        assert len(bmc.calls("GET", "/redfish/v1/Chassis")) == 1
        c.close()


@pytest.mark.parametrize(
    "kw",
    [{"max_body": 0}, {"max_members": 0}, {"max_depth": 0}, {"request_deadline": 0}, {"node_deadline": -1}],
)
def test_bounds_must_be_positive(kw):
    with pytest.raises(BadInput):
        TransportOptions(**kw)


def test_the_request_deadline_is_never_shorter_than_the_read_timeout():
    assert TransportOptions(read_timeout=200).answer_deadline == 200
    assert TransportOptions(read_timeout=5, request_deadline=20).answer_deadline == 20

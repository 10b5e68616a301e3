"""The client's transport: timeouts, retries only where safe, error classes, TLS, and
passwords kept out of every message and log line. Real HTTP(S) against tests/doubles/redfish_server.py."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import (
    ActionFailed,
    AuthenticationFailed,
    InternalError,
    RedfishError,
    TlsVerificationFailed,
    UnexpectedResponse,
    Unreachable,
)
from bringup.redfish.fanout import Task, fan_out
from bringup.redfish.power import PowerControl, PowerOptions
from tests.doubles import redfish_server
from tests.doubles.redfish_server import FakeBmc, self_signed_tls, serving

PASSWORD = "Q9-secret-bmc-pw"
S = "/redfish/v1/Systems/System.Embedded.1"
RESET = f"{S}/Actions/ComputerSystem.Reset"


def fake(**kw) -> FakeBmc:
    return FakeBmc.from_fixture("dell-idrac9", password=PASSWORD, **kw)


def ep(url: str, password: str = PASSWORD) -> BmcEndpoint:
    return BmcEndpoint("node07", url, "root", password)


def fast(**kw) -> TransportOptions:
    return TransportOptions(**{"connect_timeout": 1, "read_timeout": 1, "retries": 2, "backoff": 0.01, **kw})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: connections are refused


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)  # the DMTF library logs requests at DEBUG
    return caplog


def test_wrong_password_is_authentication_failed_without_the_password(logs):
    # Basic auth (no session): the first protected GET checks the password. With a session the
    # login does (test_client_sessions.py).
    bmc = fake()
    with serving(bmc), pytest.raises(AuthenticationFailed) as info:
        client = RedfishClient(ep(bmc.url, "wrong-Q9-password"), fast(sessions=False))
        client.connect()
        locate(client)  # the service root is public: the first protected GET checks the password
    text = str(info.value)
    assert text.startswith("authentication failed:") and "'root'" in text
    assert "wrong-Q9-password" not in text and "wrong-Q9-password" not in logs.text
    assert len(bmc.calls("GET", "/redfish/v1/Systems")) == 1  # 401 is not retried


def test_connecting_is_one_authenticated_get_and_no_session_probe(monkeypatch):
    # Every BMC got a 404 on SessionService/Sessions and an unauthenticated GET of
    # the service root. With the root protected here, an unauthenticated GET would show.
    monkeypatch.setattr(redfish_server, "PUBLIC", frozenset())
    bmc = fake()
    with serving(bmc):
        client = RedfishClient(ep(bmc.url), fast())
        client.connect()
        ctx = locate(client)
    assert ctx.system_path == S
    assert [r.path for r in bmc.requests][:1] == ["/redfish/v1"]
    assert len(bmc.calls("GET", "/redfish/v1/SessionService")) == 0
    assert len([r for r in bmc.requests if r.path == "/redfish/v1"]) == 1


def test_connection_refused_is_unreachable_after_retries():
    sleeps = []
    client = RedfishClient(ep(f"http://127.0.0.1:{closed_port()}"), fast(retries=2), sleep=sleeps.append)
    with pytest.raises(Unreachable, match="unreachable: http://127.0.0.1:\\d+: .*refused"):
        client.connect()
    assert sleeps == [0.01, 0.02]  # exponential backoff between the 3 attempts
    assert client.requests_made == 3


@pytest.mark.parametrize("status", [500, 503])
def test_gets_are_retried_on_a_transient_error_and_then_succeed(status):
    bmc = fake()
    bmc.queued["/redfish/v1/Systems"] = [status, status]
    with serving(bmc):
        client = RedfishClient(ep(bmc.url), fast(retries=2))
        client.connect()
        ctx = locate(client)
    assert ctx.system_path == S
    assert len(bmc.calls("GET", "/redfish/v1/Systems")) >= 3


def test_gets_give_up_after_the_retries():
    bmc = fake()
    bmc.queued["/redfish/v1/Systems"] = [503] * 5
    with serving(bmc), pytest.raises(UnexpectedResponse, match="HTTP 503"):
        client = RedfishClient(ep(bmc.url), fast(retries=1))
        client.connect()
        locate(client)
    assert len([r for r in bmc.calls("GET") if r.path == "/redfish/v1/Systems"]) == 2


@pytest.mark.parametrize("status", [500, 503])
def test_a_refused_action_is_never_repeated(status):
    bmc = fake()
    bmc.queued[RESET] = [status] * 3
    with serving(bmc):
        client = RedfishClient(ep(bmc.url), fast(retries=3))
        client.connect()
        ctx = locate(client)
        with pytest.raises(ActionFailed, match=f"HTTP {status}"):
            PowerControl(ctx, PowerOptions(graceful_timeout=0, timeout=1, poll=0.05)).off()
    assert len(bmc.calls("POST", "ComputerSystem.Reset")) == 1


def test_a_read_timeout_on_get_is_unreachable_and_retried():
    bmc = fake()
    bmc.hang.add("/redfish/v1/Systems")
    with serving(bmc):
        client = RedfishClient(ep(bmc.url), fast(read_timeout=0.3, retries=1))
        client.connect()
        t0 = time.monotonic()
        with pytest.raises(Unreachable, match="no answer to GET /redfish/v1/Systems within 0.3 s"):
            locate(client)
    assert time.monotonic() - t0 < 3
    assert len(bmc.calls("GET", "/redfish/v1/Systems")) == 2


def test_a_lost_answer_to_an_action_is_not_resent_and_the_state_decides():
    bmc = fake()
    with serving(bmc):
        client = RedfishClient(ep(bmc.url), fast(read_timeout=0.3, retries=3))
        client.connect()
        ctx = locate(client)
        bmc.lose_answer.add(RESET)  # the BMC does it, then the answer never comes
        result = PowerControl(ctx, PowerOptions(graceful_timeout=2, timeout=2, poll=0.05)).off()
    assert result.after == "Off"
    assert len(bmc.calls("POST", "ComputerSystem.Reset")) == 1
    assert "answer lost" in result.steps[0] and "not repeated" in result.steps[0]


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # --insecure, on purpose
def test_tls_is_verified_by_default(tmp_path):
    cert, context = self_signed_tls(tmp_path)
    bmc = fake()
    with serving(bmc, tls=context):
        assert bmc.url.startswith("https://127.0.0.1:")
        with pytest.raises(TlsVerificationFailed, match="certificate.*--ca-bundle FILE.*--insecure"):
            RedfishClient(ep(bmc.url), fast()).connect()
        trusted = discover_endpoint(ep(bmc.url), fast(ca_bundle=str(cert)))
        unverified = discover_endpoint(ep(bmc.url), fast(insecure=True))
    assert trusted.serial == unverified.serial == "CNFCP0041M0789"
    assert len(bmc.calls("GET", "/redfish/v1")) >= 2  # TLS errors happen before any request is served


def test_a_tree_that_breaks_the_schema_is_an_unexpected_response():
    bmc = fake()
    bmc.resources["/redfish/v1/Systems"] = {"Name": "Systems"}  # no Members
    with serving(bmc), pytest.raises(UnexpectedResponse, match="not a collection"):
        client = RedfishClient(ep(bmc.url), fast())
        client.connect()
        locate(client)


def test_fan_out_keeps_every_outcome_and_redacts():
    def ok() -> str:
        return "fine"

    def leaks() -> str:
        raise Unreachable(f"http://bmc: answered {PASSWORD} for some reason")

    def bug() -> str:
        raise KeyError(f"oops {PASSWORD}")

    redact = ep("http://x").redact
    seen = []
    outcomes = fan_out(
        [Task("a", ok, redact), Task("b", leaks, redact), Task("c", bug, redact)],
        concurrency=2,
        on_result=seen.append,
    )
    assert [o.name for o in outcomes] == ["a", "b", "c"] and sorted(o.name for o in seen) == ["a", "b", "c"]
    assert outcomes[0].value == "fine" and outcomes[0].ok
    assert isinstance(outcomes[1].error, Unreachable) and isinstance(outcomes[2].error, InternalError)
    for o in outcomes[1:]:
        assert PASSWORD not in str(o.error) and "***" in str(o.error)
        assert o.error.__cause__ is None


def test_one_dead_bmc_does_not_stop_the_others(logs):
    good = [fake(), fake()]
    with serving(*good):
        endpoints = [ep(good[0].url), ep(f"http://127.0.0.1:{closed_port()}"), ep(good[1].url, "bad-pw-123")]
        outcomes = fan_out(
            [
                Task(str(i), lambda e=e: discover_endpoint(e, fast(retries=0)), e.redact)
                for i, e in enumerate(endpoints)
            ]
        )
    assert [o.ok for o in outcomes] == [True, False, False]
    assert [o.error.kind for o in outcomes[1:]] == ["unreachable", "authentication failed"]
    assert isinstance(outcomes[1].error, RedfishError)
    assert PASSWORD not in logs.text and "bad-pw-123" not in logs.text


def test_fan_out_raises_the_switch_interval_only_while_it_runs():
    import sys

    before = sys.getswitchinterval()
    seen = fan_out([Task(str(i), sys.getswitchinterval) for i in range(20)], concurrency=20)
    assert all(abs(o.value - 0.05) < 1e-6 for o in seen)
    assert sys.getswitchinterval() == before
    few = fan_out([Task("a", sys.getswitchinterval)], concurrency=4)
    assert few[0].value == before

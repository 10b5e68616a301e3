"""One Redfish session per BMC: login once, the token on every request after
it, logout at the end; basic auth where a BMC has no sessions; a refused login is that BMC's
error and the others carry on. One kept-alive connection per BMC. Real HTTP against
tests/doubles/redfish_server.py."""

from __future__ import annotations

import copy
import logging

import pytest

from bringup.redfish.client import RedfishClient
from bringup.redfish.context import locate
from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import AuthenticationFailed, UnexpectedResponse
from bringup.redfish.fanout import Task, fan_out
from tests.doubles.redfish_server import FakeBmc, error_body, serving

PASSWORD = "Sess-ion-pw-77"
SESSIONS = "/redfish/v1/SessionService/Sessions"


def fake(name: str = "dell-idrac9", **kw) -> FakeBmc:
    return FakeBmc.from_fixture(name, password=PASSWORD, **kw)


def ep(bmc: FakeBmc, password: str = PASSWORD, name: str = "gpu07") -> BmcEndpoint:
    return BmcEndpoint(name, bmc.url, "root", password)


def opts(**kw) -> TransportOptions:
    return TransportOptions(**{"retries": 0, **kw})


def _comparable(hardware: dict) -> dict:
    out = copy.deepcopy(hardware)
    for key in ("discovered_at", "event_log_read_at"):
        out.pop(key, None)
    out["bmc"].pop("url")
    return out


def test_discovery_logs_in_once_uses_the_token_and_logs_out():
    bmc = fake()
    with serving(bmc):
        found = discover_endpoint(ep(bmc), opts())
    logins = bmc.calls("POST", SESSIONS, sessions=True)
    assert len(logins) == 1 and bmc.logins == 1
    assert logins[0].body == {"UserName": "root", "Password": PASSWORD}
    after = bmc.requests[bmc.requests.index(logins[0]) + 1 :]
    # Every request after the login carries the token, none the password.
    assert after and {r.auth for r in after} == {"token"}
    assert after[-1].method == "DELETE" and after[-1].path.startswith(SESSIONS + "/")
    assert bmc.tokens == {}  # logged out: no session left on the BMC
    assert found.serial == "CNFCP0041M0789"


def test_one_kept_alive_connection_per_bmc():
    bmc = fake()
    with serving(bmc):
        discover_endpoint(ep(bmc), opts())
    assert bmc.connections == 1 and len(bmc.requests) > 10


def test_a_bmc_that_closes_every_connection_is_still_read_whole():
    # The BMC drops the kept-alive connection after each answer, without saying so: each GET
    # finds it closed and is sent again on a new one.
    bmc = fake()
    bmc.keep_alive = False
    with serving(bmc):
        found = discover_endpoint(ep(bmc), opts())
    assert found.serial == "CNFCP0041M0789"
    assert bmc.connections == len(bmc.requests)


def test_a_bmc_without_sessions_gets_basic_auth_and_the_same_discovery():
    with_sessions, without = fake(), fake(sessions=False)
    with serving(with_sessions, without):
        a = discover_endpoint(ep(with_sessions), opts())
        b = discover_endpoint(ep(without), opts())
    assert len(without.calls("POST", SESSIONS, sessions=True)) == 1  # asked once, answered 405
    assert {r.auth for r in without.requests} == {"basic"}
    assert not any(r.method == "DELETE" for r in without.requests)
    assert _comparable(a.hardware) == _comparable(b.hardware)


def test_a_service_root_without_a_sessions_link_is_never_asked_for_one():
    bmc = fake("hpe-dl360g10p")  # its root links no SessionService
    with serving(bmc):
        found = discover_endpoint(ep(bmc), opts())
    assert found.serial and not bmc.calls("POST", sessions=True)
    assert {r.auth for r in bmc.requests} == {"basic"}


def test_sessions_off_is_basic_auth_on_every_request():
    bmc = fake()
    with serving(bmc):
        discover_endpoint(ep(bmc), opts(sessions=False))
    assert not bmc.calls("POST", SESSIONS, sessions=True) and {r.auth for r in bmc.requests} == {"basic"}


def test_a_wrong_password_fails_at_the_login_once_and_is_never_shown(caplog):
    caplog.set_level(logging.DEBUG)
    bmc = fake()
    with serving(bmc), pytest.raises(AuthenticationFailed) as info:
        discover_endpoint(ep(bmc, "wrong-Sess-pw"), TransportOptions(retries=3, backoff=0.01))
    text = str(info.value)
    assert text.startswith("authentication failed:") and "'root'" in text and "401" in text
    assert "wrong-Sess-pw" not in text and "wrong-Sess-pw" not in caplog.text
    assert len(bmc.calls("POST", SESSIONS, sessions=True)) == 1  # a 401 is not retried
    assert not bmc.calls("GET", "/redfish/v1/Systems")


def test_a_refused_session_is_that_bmcs_clear_error_and_the_others_carry_on():
    full = fake()
    full.post_errors[SESSIONS] = (
        400,
        error_body("The maximum number of user sessions is reached.", "Base.1.12.SessionLimitExceeded"),
    )
    good = [fake(), fake()]
    with serving(full, *good):
        tasks = [
            Task(name, lambda b=b, name=name: discover_endpoint(ep(b, name=name), opts()), ep(b).redact)
            for name, b in (("gpu01", full), ("gpu02", good[0]), ("gpu03", good[1]))
        ]
        outcomes = fan_out(tasks)
    bad, *fine = outcomes
    assert not bad.ok and isinstance(bad.error, AuthenticationFailed)
    assert "refused a login session" in bad.error.message and "HTTP 400" in bad.error.message
    assert "maximum number of user sessions" in bad.error.message
    assert PASSWORD not in str(bad.error)
    assert all(o.ok and o.value.serial for o in fine)
    assert not full.calls("GET", "/redfish/v1/Systems")  # nothing read without a session


def test_a_dropped_token_is_renewed_once():
    bmc = fake()
    with serving(bmc):
        client = RedfishClient(ep(bmc), opts())
        client.connect()
        bmc.tokens.clear()  # the BMC forgot the session (its timeout, a reset)
        ctx = locate(client)
        client.close()
    assert ctx.system["Id"] == "System.Embedded.1"
    assert bmc.logins == 2 and bmc.tokens == {}


def test_a_failed_logout_never_masks_the_result(caplog):
    bmc = fake()
    bmc.hang.add(f"{SESSIONS}/1")  # the logout never gets an answer
    with serving(bmc):
        found = discover_endpoint(ep(bmc), opts(read_timeout=0.3))
    assert found.serial == "CNFCP0041M0789"
    assert "logout failed" in caplog.text and "SessionTimeout" in caplog.text


def test_the_system_comes_with_its_chassis_and_manager_where_links_expand():
    bmc = fake()
    with serving(bmc), RedfishClient(ep(bmc), opts()) as client:
        ctx = locate(client)
    system_reads = bmc.calls("GET", "/redfish/v1/Systems/System.Embedded.1")
    assert [r.query for r in system_reads] == ["$expand=~"]
    assert not bmc.calls("GET", "/redfish/v1/Managers/iDRAC.Embedded.1")
    assert ctx.manager["FirmwareVersion"] and "/redfish/v1/Chassis/System.Embedded.1" in ctx.linked
    # The system reads as a plain GET would answer it: its links are references again.
    assert ctx.system["Links"]["ManagedBy"] == [{"@odata.id": "/redfish/v1/Managers/iDRAC.Embedded.1"}]


def test_links_expansion_changes_nothing_discovery_finds():
    expanded, plain = fake(), fake()
    plain.resources["/redfish/v1"]["ProtocolFeaturesSupported"]["ExpandQuery"]["Links"] = False
    with serving(expanded, plain):
        a = discover_endpoint(ep(expanded), opts())
        b = discover_endpoint(ep(plain), opts())
    assert _comparable(a.hardware) == _comparable(b.hardware)
    assert len(expanded.requests) == len(plain.requests) - 2  # the chassis and manager GETs


def test_select_asks_for_the_fields_where_advertised_and_falls_back_where_refused():
    # The S3260 lists its SEL without severities: each entry is fetched on its own.
    advertised, refusing, silent = (fake("cisco-ucs-s3260") for _ in range(3))
    for bmc in (advertised, refusing):
        bmc.resources["/redfish/v1"].setdefault("ProtocolFeaturesSupported", {})["SelectQuery"] = True
    with serving(advertised, refusing, silent):
        entries = [r for r in refusing.resources if "/Entries/" in r]
        for path in entries:
            refusing.queued[path] = [501]  # advertised, then refused
        found = [discover_endpoint(ep(b), opts()) for b in (advertised, refusing, silent)]
    selected = [r for r in advertised.calls("GET") if "/Entries/" in r.path]
    assert selected and all("$select=" in r.query for r in selected)
    assert not any("select" in r.query for r in silent.requests)
    for path in entries:  # asked with $select, refused, asked again without
        asked = [r.query for r in refusing.calls("GET") if r.path == path]
        assert len(asked) == 2 and asked[0].startswith("$select=") and asked[1] == ""
    assert found[0].hardware["event_log"] == found[1].hardware["event_log"] == found[2].hardware["event_log"]
    assert found[0].hardware["event_log"]


def test_a_redirect_to_the_same_bmc_is_followed_and_one_elsewhere_is_not():
    moved, away = fake(), fake()
    for bmc in (moved, away):
        bmc.resources["/redfish/v1/Systems-v2"] = copy.deepcopy(bmc.resources["/redfish/v1/Systems"])
    with serving(moved, away):
        moved.redirects["/redfish/v1/Systems"] = f"{moved.url}/redfish/v1/Systems-v2"
        away.redirects["/redfish/v1/Systems"] = "https://elsewhere.example/redfish/v1/Systems"
        found = discover_endpoint(ep(moved), opts())
        with pytest.raises(UnexpectedResponse, match="HTTP 301"):
            discover_endpoint(ep(away), opts())
    assert found.serial == "CNFCP0041M0789" and moved.calls("GET", "/redfish/v1/Systems-v2")
    assert away.tokens == {}  # logged out all the same

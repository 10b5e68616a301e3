"""A BMC that sends too much, too slowly or too deep is one node's clear error, and the other
nodes of the same discovery are discovered (docs/redfish.md, "Bounds"). Real HTTP: the healthy
BMC is tests/doubles/redfish_server.py's, the hostile one tests/doubles/hostile_bmc.py's.

Each discovery runs in a thread the test waits for at most ``HANG`` seconds: a probe that made
discovery read on without end fails as hung instead of holding the suite (a bound, not a speed
figure; benchmarks/discover_hostile.py measures time and memory)."""

from __future__ import annotations

import threading

import pytest

from bringup.redfish.discovery import discover_endpoint
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import LimitExceeded, UnexpectedResponse
from bringup.redfish.fanout import Outcome, Task, fan_out
from tests.doubles.hostile_bmc import HostileBmc
from tests.doubles.redfish_server import FakeBmc, serving

PASSWORD = "Q9-secret-bmc-pw"
S = "/redfish/v1/Systems/System.Embedded.1"
NICS = f"{S}/EthernetInterfaces"
HANG = 60.0
MiB = 1 << 20


def discover_rack(hostile: HostileBmc, options: TransportOptions) -> tuple[Outcome, Outcome]:
    """(the healthy node's outcome, the hostile node's), discovered together."""
    healthy = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    got: list[list[Outcome]] = []
    with serving(healthy), hostile:
        endpoints = [
            BmcEndpoint("good01", healthy.url, "root", PASSWORD),
            BmcEndpoint("bad01", hostile.url, "root", PASSWORD),
        ]
        tasks = [Task(e.name, lambda e=e: discover_endpoint(e, options), e.redact) for e in endpoints]
        runner = threading.Thread(target=lambda: got.append(fan_out(tasks)), daemon=True)
        runner.start()
        runner.join(HANG)
    assert got, f"discovery with a {hostile.abuse} BMC still running after {HANG:g} s"
    good, bad = got[0]
    assert good.ok, good.error
    assert good.value is not None and good.value.serial
    return good, bad


def fast(**kw) -> TransportOptions:
    return TransportOptions(**{"connect_timeout": 2, "read_timeout": 5, "retries": 1, "backoff": 0.01, **kw})


def test_a_gzip_bomb_is_refused_past_the_decompressed_cap():
    # 64 MiB of JSON in about 64 kB on the wire; the default cap is 8 MiB.
    bomb = HostileBmc("gzip_bomb", S, size=64 * MiB)
    _good, bad = discover_rack(bomb, fast())
    assert isinstance(bad.error, LimitExceeded), bad.error
    text = str(bad.error)
    assert text.startswith("over limit: ") and bomb.url in text and S in text
    assert "decompressed" in text and "8 MiB" in text and "--max-body-mib" in text


@pytest.mark.parametrize("abuse", ["big_body", "big_stream"])
def test_a_100_mb_body_is_refused_past_the_cap_without_reading_it_all(abuse):
    # big_stream announces no length: it is refused on what has arrived.
    big = HostileBmc(abuse, S, size=100 * MiB)
    _good, bad = discover_rack(big, fast())
    assert isinstance(bad.error, LimitExceeded), bad.error
    text = str(bad.error)
    assert bad.error.kind == "over limit" and big.url in text and S in text and "8 MiB" in text
    assert big.hits == 1  # refused, not asked again


def test_a_body_over_a_configured_cap_is_refused():
    big = HostileBmc("big_body", S, size=3 * MiB)
    _good, bad = discover_rack(big, fast(max_body=2 * MiB))
    assert isinstance(bad.error, LimitExceeded) and "2 MiB" in str(bad.error), bad.error


@pytest.mark.parametrize("abuse", ["drip_body", "drip_headers"])
def test_a_server_sending_one_byte_at_a_time_meets_the_request_deadline(abuse):
    # Each byte comes well within the read timeout, so only a deadline on the whole request ends it.
    slow = HostileBmc(abuse, S, interval=0.2)
    _good, bad = discover_rack(slow, fast(read_timeout=1, request_deadline=2))
    assert bad.error is not None and bad.error.kind == "deadline exceeded", bad.error
    text = str(bad.error)
    assert slow.url in text and f"GET {S}" in text and "2 s" in text and "--request-deadline" in text
    assert slow.hits == 1  # a request past its deadline is not sent again


def test_a_node_past_its_deadline_fails_as_a_whole():
    # Every request keeps within the request deadline; the node as a whole does not.
    slow = HostileBmc("drip_body", NICS, interval=0.2)
    _good, bad = discover_rack(slow, fast(request_deadline=60, node_deadline=2))
    assert bad.error is not None and bad.error.kind == "deadline exceeded", bad.error
    text = str(bad.error)
    assert slow.url in text and "within 2 s" in text and "--node-deadline" in text


@pytest.mark.parametrize("abuse", ["many_members", "paged_members"])
def test_a_collection_of_100000_members_is_refused_before_any_member_is_read(abuse):
    many = HostileBmc(abuse, NICS, size=100_000)
    _good, bad = discover_rack(many, fast())
    assert isinstance(bad.error, LimitExceeded), bad.error
    text = str(bad.error)
    assert many.url in text and NICS in text and "10000 members" in text and "--max-members" in text
    assert many.requests < 40  # the members were never fetched one by one


@pytest.mark.parametrize("depth", [10_000, 100])
def test_deeply_nested_json_is_a_clear_error_not_an_internal_one(depth):
    deep = HostileBmc("deep_json", S, size=depth)
    _good, bad = discover_rack(deep, fast())
    assert isinstance(bad.error, LimitExceeded), bad.error
    text = str(bad.error)
    assert deep.url in text and S in text and "nested deeper than 64 levels" in text


def test_a_200_whose_body_is_a_redfish_error_names_the_bmc_and_the_url():
    liar = HostileBmc("error_200", S)
    _good, bad = discover_rack(liar, fast())
    assert isinstance(bad.error, UnexpectedResponse), bad.error
    text = str(bad.error)
    assert liar.url in text and f"GET {S}" in text and "HTTP 200" in text and "error" in text
    assert "the service is busy" in text  # what the BMC said


def test_a_200_error_body_in_an_optional_source_is_recorded_as_not_read_never_as_empty():
    # EthernetInterfaces is one source of the NIC section among others (NetworkAdapters): its
    # error costs its own MACs only (docs/redfish.md), and the record says it was not read.
    liar = HostileBmc("error_200", NICS)
    with liar:
        d = discover_endpoint(BmcEndpoint("bad01", liar.url, "root", PASSWORD), fast())
    said = [w for w in d.hardware["warnings"] if w.startswith("EthernetInterfaces not read")]
    assert len(said) == 1 and "HTTP 200" in said[0] and NICS in said[0], d.hardware["warnings"]

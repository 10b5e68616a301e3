"""Where a BMC is, how to log in, and how patient and how trusting to be with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import requests

from bringup.core.errors import BadInput
from bringup.redfish.errors import redact

VENDORS = ("dell", "hpe", "supermicro", "generic")
PLAIN_HTTP_NOTE = "none (plain HTTP)"
# A Redfish answer is a few kB; an expanded 1,000-entry event log about 1 MB.
DEFAULT_MAX_BODY = 8 << 20
# A SEL holds up to a few thousand entries; a collection past this is a BMC gone wrong.
DEFAULT_MAX_MEMBERS = 10_000
# Redfish resources nest under 10 levels (the project's fixtures: 5; OEM sections a few more).
DEFAULT_MAX_DEPTH = 64
DEFAULT_REQUEST_DEADLINE = 120.0
DEFAULT_NODE_DEADLINE = 300.0  # `bringup discover --node-deadline`


def normalise_url(address: str) -> str:
    """``10.0.0.1`` -> ``https://10.0.0.1``; a URL keeps its scheme and port; no path, no user."""
    url = address if "://" in address else f"https://{address}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BadInput(f"BMC address {address!r}: scheme must be http or https")
    if parts.username or parts.password:
        raise BadInput("BMC address must not carry credentials; use bmc_username and bmc_password")
    if not parts.hostname:
        raise BadInput(f"BMC address {address!r} has no host")
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class TransportOptions:
    """Timeouts, retries and TLS trust for every BMC of a run.

    ``retries`` applies to GETs and to connection failures before a request was sent; an
    action (POST) or a PATCH that reached the BMC is never repeated.
    """

    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5  # first retry delay; doubles each time
    backoff_max: float = 8.0
    ca_bundle: str | None = None
    insecure: bool = False
    allow_http: bool = False  # --allow-http: plain-HTTP BMC addresses allowed for every host
    # One login session per BMC where it has a SessionService (client.py says why); False:
    # basic auth on every request, as before sessions (benchmarks compare the two).
    sessions: bool = True
    # Bounds on what one BMC may send (docs/redfish.md, "Bounds"): past any of them the node
    # fails with its own error and the others carry on.
    max_body: int = DEFAULT_MAX_BODY  # bytes of one answer, on the wire and decompressed
    max_members: int = DEFAULT_MAX_MEMBERS  # members of one collection, all its pages together
    max_depth: int = DEFAULT_MAX_DEPTH  # nesting of one JSON answer
    # Seconds for one request's whole answer, however steadily it trickles in (the read
    # timeout bounds each receive only); never shorter than the read timeout.
    request_deadline: float = DEFAULT_REQUEST_DEADLINE
    node_deadline: float | None = None  # seconds for everything done with one BMC; None: no bound

    def __post_init__(self) -> None:
        if self.insecure and self.ca_bundle:
            raise BadInput("--insecure and --ca-bundle contradict each other; pick one")
        if self.connect_timeout <= 0 or self.read_timeout <= 0:
            raise BadInput("timeouts must be positive")
        if self.request_deadline <= 0 or (self.node_deadline is not None and self.node_deadline <= 0):
            raise BadInput("deadlines must be positive")
        if self.retries < 0:
            raise BadInput("retries must be 0 or more")
        if self.max_body < 1 or self.max_members < 1 or self.max_depth < 1:
            raise BadInput("the body, member and depth limits must be at least 1")

    @property
    def answer_deadline(self) -> float:
        """Seconds one request may take in all: the request deadline, or the read timeout where
        that is longer (a single slow receive is already allowed that long)."""
        return max(self.request_deadline, self.read_timeout)

    @property
    def timeout(self) -> tuple[float, float]:
        return (self.connect_timeout, self.read_timeout)

    @property
    def cafile(self) -> str | None:
        """What the DMTF client verifies against; None means it does not verify at all."""
        if self.insecure:
            return None
        return self.ca_bundle or requests.certs.where()

    @property
    def tls_note(self) -> str:
        if self.insecure:
            return "insecure: TLS certificates NOT verified (--insecure)"
        return f"verified against {self.ca_bundle}" if self.ca_bundle else "verified (system CA bundle)"


@dataclass(frozen=True)
class BmcEndpoint:
    """One node's BMC. ``vendor`` is the inventory's word; ``vendor_forced`` makes it win
    over what the BMC says about itself."""

    name: str
    url: str
    username: str
    password: str = field(repr=False)
    vendor: str | None = None
    vendor_forced: bool = False
    require_prechecks: bool = False  # a vendor pre-change check that cannot run refuses the change
    system: str | None = None  # inventory bmc_system: which of the BMC's systems this node is

    def __post_init__(self) -> None:
        if self.vendor is not None and self.vendor not in VENDORS:
            raise BadInput(f"unknown BMC vendor {self.vendor!r} (one of {', '.join(VENDORS)})")

    def redact(self, text: str) -> str:
        return redact(text, [self.password])

    @property
    def plain_http(self) -> bool:
        """No TLS at all: the basic-auth password crosses the network in cleartext."""
        return self.url.startswith("http://")


def transport_details(options: TransportOptions, endpoint: BmcEndpoint | None) -> dict[str, Any]:
    """What protected the connection to this BMC, for run and event details: a plain-HTTP
    address is never recorded as TLS, whatever the run's TLS options."""
    if endpoint is not None and endpoint.plain_http:
        return {"tls": PLAIN_HTTP_NOTE, "insecure": True}
    return {"tls": options.tls_note, "insecure": options.insecure}


def plain_http_problem(host: str, url: str) -> str:
    """Why a plain-HTTP BMC address is refused, and how to allow it knowingly."""
    return (
        f"host {host}: BMC address {url} is plain HTTP (no TLS): the BMC password would cross the "
        "network in cleartext; use https://, or allow it knowingly with `bmc_allow_http: true` for "
        "this host in the inventory (or --allow-http)"
    )

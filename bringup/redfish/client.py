"""The one place bringup talks HTTP to a BMC: the DMTF ``redfish`` library, tamed.

The library does not raise on HTTP errors, has no timeout by default and retries every
method (POST actions included) ten times with one-second sleeps (LAB.md). This client asks
it for exactly one attempt per call, with a (connect, read) timeout, and does its own
retrying: GETs (idempotent) on connection errors, timeouts and 429/500/502/503/504 with
exponential backoff (a BMC's 500 on a read is usually a passing internal error); anything
else only when the connection was never established, so an action that may have reached the
BMC is never repeated. Every failure becomes one of the classes in ``errors``. Basic auth on
every request, the service root's included: no sessions to leak or to exhaust, which keeps
hundreds of concurrent BMCs cheap. The library's own basic ``login()`` is not used: it GETs
the sessions collection only to see a 401 (a 404 on BMCs without one), and the first
protected request of every operation checks the credentials just as well.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redfish
import requests
from redfish.rest.v1 import RetriesExhaustedError, RisObject

from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import (
    ActionFailed,
    AmbiguousAction,
    AuthenticationFailed,
    NotSupported,
    RedfishError,
    TlsVerificationFailed,
    UnexpectedResponse,
    Unreachable,
)
from bringup.redfish.messages import describe_messages, link

log = logging.getLogger("bringup.redfish")

ROOT = "/redfish/v1/"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_PAGES = 50  # Members@odata.nextLink pages followed per collection (a 1024-entry SEL is ~20)


@dataclass
class Response:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def _chain(exc: BaseException, depth: int = 8) -> list[BaseException]:
    """exc and the exceptions it wraps (args, .reason, __cause__, __context__)."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo and len(seen) < depth * 4:
        e = todo.pop(0)
        if e in seen:
            continue
        seen.append(e)
        todo += [a for a in getattr(e, "args", ()) if isinstance(a, BaseException)]
        for attr in ("reason", "__cause__", "__context__"):
            nxt = getattr(e, attr, None)
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


def _reason(exc: BaseException) -> str:
    """A short human reason from a requests/urllib3 exception chain."""
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, ssl.SSLCertVerificationError):
            return e.verify_message or str(e)
    texts = [str(e) for e in chain if str(e)]
    for pattern in (
        r"Failed to establish a new connection: (\[Errno -?\d+\][^')\]]*)",
        r"Failed to resolve '([^']*)'",
        r"(\[Errno -?\d+\][^')\]]*)",
        r"(Connection aborted)",
        r"(RemoteDisconnected\([^)]*\))",
    ):
        for text in texts:
            if m := re.search(pattern, text):
                found = m.group(1).strip().strip("\"'")
                return f"cannot resolve host {found}" if "resolve" in pattern else found
    return texts[-1][:200] if texts else type(chain[-1]).__name__


def _never_sent(exc: BaseException) -> bool:
    """True when the request surely did not reach the BMC (so repeating it is safe)."""
    for e in _chain(exc):
        if isinstance(e, (requests.exceptions.ConnectTimeout, ConnectionRefusedError)):
            return True
        name = type(e).__name__
        if name in ("NewConnectionError", "NameResolutionError", "ConnectTimeoutError"):
            return True
    return False


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


class RedfishClient:
    """One BMC. Use as a context manager, or call connect() and close()."""

    def __init__(
        self,
        endpoint: BmcEndpoint,
        options: TransportOptions | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.endpoint = endpoint
        self.options = options or TransportOptions()
        self._sleep = sleep
        self._lib: Any = None
        self.root: dict[str, Any] = {}
        self.requests_made = 0

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> RedfishClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        """Read the service root, with credentials: one request. A wrong password shows as
        ``AuthenticationFailed`` at the first protected resource (the root is public)."""
        ep = self.endpoint
        self._lib = redfish.redfish_client(
            base_url=ep.url,
            username=ep.username,
            password=ep.password,
            cafile=self.options.cafile,
            timeout=self.options.timeout,
            max_retry=0,
            proxies={"http": "", "https": ""},  # BMC networks are reached directly
            check_connectivity=False,
        )
        # Verification and proxies are passed explicitly; reading them (and ~/.netrc) from the
        # environment on every request costs a quarter of the client's CPU at hundreds of BMCs.
        self._lib._session.trust_env = False
        # Basic auth from the first request: some BMCs wrongly protect the service root, and
        # asking once without credentials first costs every BMC a request.
        self._lib.set_authorization_key(_basic(ep.username, ep.password))
        resp = self._request("GET", ROOT)
        if not isinstance(resp.body, dict) or not resp.body:
            raise UnexpectedResponse(f"{ep.url}: the service root {ROOT} is empty or not a JSON object")
        self.root = resp.body
        # What the library would have done itself with check_connectivity=True.
        self._lib.root = RisObject.parse(self.root)
        self._lib.root_resp = True
        self._lib.login_url = link(self.root, "Links", "Sessions") or "/redfish/v1/SessionService/Sessions"

    def close(self) -> None:
        if self._lib is not None:
            # Basic auth: no session to DELETE on the BMC; closing sockets never masks a result.
            with contextlib.suppress(Exception):
                self._lib._session.close()

    # -- requests -------------------------------------------------------------------------

    def get(self, path: str, args: dict[str, str] | None = None) -> dict[str, Any]:
        return self._request("GET", path, args=args).body

    def get_response(self, path: str) -> Response:
        return self._request("GET", path)

    def get_optional(self, path: str | None) -> dict[str, Any] | None:
        """The resource, or None when this BMC does not have it (404/405/501)."""
        if not path:
            return None
        try:
            return self.get(path)
        except NotSupported:
            return None

    def post(self, path: str, body: dict[str, Any], *, idempotent: bool = False) -> Response:
        """An action. Repeated only when the BMC never saw it, or when ``idempotent`` (a query
        dressed as an action, such as Dell's GetRemoteServicesAPIStatus)."""
        return self._request("POST", path, body=body, idempotent=idempotent)

    def patch(self, path: str, body: dict[str, Any], etag: str | None = None) -> Response:
        headers = {"If-Match": etag} if etag else None
        return self._request("PATCH", path, body=body, headers=headers)

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        args: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        idempotent: bool | None = None,
        auth_checked: bool = True,
    ) -> Response:
        if self._lib is None:
            raise RuntimeError("RedfishClient.connect() first")
        idempotent = method == "GET" if idempotent is None else idempotent
        attempts = 1 + self.options.retries
        for attempt in range(1, attempts + 1):
            self.requests_made += 1
            try:
                if method == "GET":
                    raw = self._lib.get(path, args=args, headers=headers, max_retry=0)
                elif method == "POST":
                    raw = self._lib.post(path, body=body, headers=headers, max_retry=0)
                elif method == "PATCH":
                    raw = self._lib.patch(path, body=body, headers=headers, max_retry=0)
                else:
                    raise ValueError(f"unsupported method {method}")
            except RetriesExhaustedError as exc:
                err = self._transport_error(exc, method, path)
                safe = idempotent or _never_sent(exc)
                if attempt < attempts and safe and not isinstance(err, TlsVerificationFailed):
                    log.debug(
                        "%s: %s %s failed (%s), retry %d", self.endpoint.name, method, path, err, attempt
                    )
                    self._backoff(attempt, None)
                    continue
                if not safe:
                    raise AmbiguousAction(
                        f"{err.message}; the {method} may have reached the BMC and is not repeated"
                    ) from None
                raise err from None
            except redfish.rest.v1.JsonDecodingError:
                raise UnexpectedResponse(
                    f"{self.endpoint.url}: {method} {path} answered with invalid JSON"
                ) from None
            if raw.status in RETRY_STATUSES and idempotent and attempt < attempts:
                self._backoff(attempt, raw.getheader("retry-after"))
                continue
            return self._check(raw, method, path, auth_checked)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _backoff(self, attempt: int, retry_after: str | None) -> None:
        delay = min(self.options.backoff * 2 ** (attempt - 1), self.options.backoff_max)
        if retry_after and retry_after.isdigit():
            delay = min(float(retry_after), self.options.backoff_max)
        self._sleep(delay)

    def _check(self, raw: Any, method: str, path: str, auth_checked: bool) -> Response:
        status = int(raw.status)
        try:
            body = raw.dict if raw.read else {}
        except redfish.rest.v1.JsonDecodingError:
            if 200 <= status < 300 and method == "GET":
                raise UnexpectedResponse(
                    f"{self.endpoint.url}: GET {path} answered HTTP {status} with a body that is not JSON"
                ) from None
            body = {}
        if not isinstance(body, dict):
            if method == "GET":
                raise UnexpectedResponse(f"{self.endpoint.url}: GET {path} did not answer a JSON object")
            body = {}
        headers = {k.lower(): v for k, v in raw.getheaders()}
        if 200 <= status < 300:
            return Response(status, body, headers)
        where = f"{self.endpoint.url}: {method} {path}"
        detail = describe_messages(body)
        detail = f" ({detail})" if detail else ""
        if status == 401 and not auth_checked:
            return Response(status, body, headers)
        if status == 401:
            raise AuthenticationFailed(
                f"{where} answered 401: check bmc_username {self.endpoint.username!r} and the password "
                "the inventory references",
                status=status,
            )
        if status == 403:
            raise AuthenticationFailed(
                f"{where} answered 403: user {self.endpoint.username!r} lacks the privilege{detail}",
                status=status,
            )
        if status in (404, 405, 501):
            raise NotSupported(f"{where}: HTTP {status}{detail}", status=status)
        if method == "GET":
            raise UnexpectedResponse(f"{where}: HTTP {status}{detail}", status=status)
        err = ActionFailed(f"{where}: HTTP {status}{detail}", status=status)
        err.body = body  # type: ignore[attr-defined]  # for vendor diagnosis (Dell pending jobs)
        raise err

    def _transport_error(self, exc: BaseException, method: str, path: str) -> RedfishError:
        url = self.endpoint.url
        chain = _chain(exc)
        if any(isinstance(e, requests.exceptions.SSLError) for e in chain):
            return TlsVerificationFailed(
                f"{url}: {_reason(exc)}; give the CA that signed the BMC's certificate with --ca-bundle FILE, "
                "or accept an unverified connection knowingly with --insecure"
            )
        if any(isinstance(e, requests.exceptions.ConnectTimeout) for e in chain):
            return Unreachable(f"{url}: no connection within {self.options.connect_timeout:g} s")
        if any(isinstance(e, requests.exceptions.ReadTimeout) for e in chain):
            return Unreachable(
                f"{url}: no answer to {method} {path} within {self.options.read_timeout:g} s (read timeout)"
            )
        return Unreachable(f"{url}: {_reason(exc)}")

    # -- collections ----------------------------------------------------------------------

    @property
    def expand_query(self) -> str | None:
        """The ``$expand`` value this service advertises for members, or None."""
        feats = self.root.get("ProtocolFeaturesSupported") or {}
        expand = feats.get("ExpandQuery") if isinstance(feats, dict) else None
        if not isinstance(expand, dict):
            return None
        if expand.get("NoLinks"):
            value = "."
        elif expand.get("ExpandAll"):
            value = "*"
        else:
            return None
        return f"{value}($levels=1)" if expand.get("Levels") else value

    @property
    def select_query(self) -> bool:
        """Whether this service advertises ``$select``."""
        feats = self.root.get("ProtocolFeaturesSupported") or {}
        return isinstance(feats, dict) and feats.get("SelectQuery") is True

    def get_fields(self, path: str, fields: tuple[str, ...]) -> dict[str, Any]:
        """A resource, cut to ``fields`` with ``$select`` where the service advertises it
        (a service that refuses it anyway is asked again without)."""
        if not self.select_query:
            return self.get(path)
        try:
            return self.get(path, args={"$select": ",".join(fields)})
        except (UnexpectedResponse, NotSupported) as exc:
            if exc.status not in (400, 501):
                raise
            return self.get(path)

    def listed_members(self, collection: str) -> list[dict[str, Any]]:
        """A collection's members as the service lists them: expanded in the same request
        where it advertises ``$expand``, else (or when it did not expand them) often only
        ``@odata.id``. No per-member GETs: the caller decides which members it needs."""
        return self._pages(collection, expand=True)

    def member_links(self, collection: str) -> list[str]:
        return [m["@odata.id"] for m in self._pages(collection, expand=False) if "@odata.id" in m]

    def members(self, collection: str) -> list[dict[str, Any]]:
        """Every member of a collection, expanded in one request where the BMC supports
        ``$expand``, else one GET per member."""
        out = []
        for member in self._pages(collection, expand=True):
            if set(member) - {"@odata.id"}:
                out.append(member)
            elif "@odata.id" in member:
                out.append(self.get(member["@odata.id"]))
        return out

    def _pages(self, collection: str, expand: bool) -> list[dict[str, Any]]:
        args = {"$expand": self.expand_query} if expand and self.expand_query else None
        try:
            doc = self.get(collection, args=args)
        except (UnexpectedResponse, NotSupported) as exc:
            # DSP0266: 400 for a query it cannot parse, 501 for one it does not implement.
            if not args or exc.status not in (400, 501):
                raise
            doc = self.get(collection)  # advertised $expand but refused it: one GET per member
        found: list[dict[str, Any]] = []
        for _ in range(MAX_PAGES):
            members = doc.get("Members")
            if not isinstance(members, list):
                raise UnexpectedResponse(
                    f"{self.endpoint.url}: {collection} is not a collection (no Members)"
                )
            found += [m for m in members if isinstance(m, dict)]
            nxt = doc.get("Members@odata.nextLink")
            if not isinstance(nxt, str):
                break
            doc = self.get(nxt)
        return found

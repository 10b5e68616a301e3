"""The one place bringup talks HTTP to a BMC.

One kept-alive connection per BMC (``connection.py``, the standard library's http.client: a
quarter of the CPU per request of requests + urllib3 + the DMTF library it replaced). Every
call is one attempt with a (connect, read) timeout; this client does the retrying: GETs
(idempotent) on connection errors, timeouts and 429/500/502/503/504 with exponential backoff
(a BMC's 500 on a read is usually a passing internal error); anything else only when the
request never left this machine, so an action that may have reached the BMC is never
repeated. Every failure becomes one of the classes in ``errors``.

Authentication: one Redfish session per BMC where the service root links a sessions
collection (``Links.Sessions``): one login (POST, the credentials in its body), the
``X-Auth-Token`` on every request after it, one logout (DELETE) in ``close()``. A BMC checks a
token far faster than a password (iDRACs and iLOs run every basic-auth request through their
user database), and it is one login per BMC rather than one per request. A BMC without a
SessionService, or one that answers the login 404/405/501, gets basic auth on every request.
A refused login (401, 403, or a BMC out of sessions) is this node's error; the others carry
on. A token the BMC drops mid-run (401) is renewed once. Logout failures are logged, never
raised: the BMC expires the session after its SessionTimeout.

Bounds (docs/redfish.md, "Bounds"): what one BMC sends is held to ``TransportOptions``' limits,
the size of an answer (``connection.py``), a deadline per request and one per client (the
node), the members of a collection and the nesting of an answer. Past one, the node fails
with ``LimitExceeded`` (or ``DeadlineExceeded``), which no discovery section takes for a
missing part, and nothing is retried.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from bringup.redfish.connection import BodyTooLarge, Connection, TransportError, tls_context
from bringup.redfish.endpoint import BmcEndpoint, TransportOptions
from bringup.redfish.errors import (
    ActionFailed,
    AmbiguousAction,
    AuthenticationFailed,
    DeadlineExceeded,
    LimitExceeded,
    NotSupported,
    RedfishError,
    TlsVerificationFailed,
    UnexpectedResponse,
    Unreachable,
)
from bringup.redfish.messages import describe_messages, link
from bringup.redfish.readers import split_links

log = logging.getLogger("bringup.redfish")

ROOT = "/redfish/v1/"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_PAGES = 50  # Members@odata.nextLink pages followed per collection (a 1024-entry SEL is ~20)
_QUERY_SAFE = "/?:!$'()*+,;=~"  # Redfish queries ($expand=.($levels=1)) are sent as written


@dataclass
class Response:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def nested_deeper(doc: Any, limit: int) -> bool:
    """Whether ``doc`` nests objects and arrays more than ``limit`` levels deep (iteratively:
    what checks nesting must not itself recurse)."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)) and child:
                stack.append((child, depth + 1))
    return False


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def _target(path: str, args: dict[str, str] | None) -> str:
    path = path.replace("//", "/")
    if not args:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode(args, quote_via=quote, safe=_QUERY_SAFE)}"


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
        self._conn: Connection | None = None
        self._basic = _basic(endpoint.username, endpoint.password)
        self._token: str | None = None
        self._session_path: str | None = None
        self.root: dict[str, Any] = {}
        self.requests_made = 0
        self._node_deadline: float | None = None  # time.monotonic() everything must end by

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> RedfishClient:
        try:
            self.connect()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def session(self) -> bool:
        """Whether requests carry a session token (else basic auth)."""
        return self._token is not None

    def connect(self) -> None:
        """Read the service root (basic auth from the first request: some BMCs wrongly protect
        it, and asking once without credentials first costs every BMC a request), then log in
        where the BMC has a SessionService. A wrong password is ``AuthenticationFailed`` at the
        login, or at the first protected resource without sessions (the root is public)."""
        ep = self.endpoint
        parts = urlsplit(ep.url)
        tls = None
        if parts.scheme == "https":
            tls = tls_context(self.options.cafile, verify=not self.options.insecure)
        self._conn = Connection(
            parts.scheme,
            parts.hostname or "",
            parts.port,
            connect_timeout=self.options.connect_timeout,
            read_timeout=self.options.read_timeout,
            tls=tls,
            max_body=self.options.max_body,
        )
        if self.options.node_deadline is not None:
            self._node_deadline = time.monotonic() + self.options.node_deadline
        resp = self._request("GET", ROOT)
        if not isinstance(resp.body, dict) or not resp.body:
            raise UnexpectedResponse(f"{ep.url}: the service root {ROOT} is empty or not a JSON object")
        self.root = resp.body
        if self.options.sessions:
            self._login()

    def _login(self) -> None:
        sessions = link(self.root, "Links", "Sessions")
        if not sessions:
            return  # no SessionService: basic auth on every request
        ep = self.endpoint
        body = {"UserName": ep.username, "Password": ep.password}
        try:
            resp = self._request("POST", sessions, body=body, idempotent=True, login=True)
        except NotSupported as exc:
            log.debug("%s: no login sessions (%s): basic auth", ep.name, exc.message)
            return
        except ActionFailed as exc:
            detail = describe_messages(getattr(exc, "body", {}) or {})
            raise AuthenticationFailed(
                f"{ep.url}: POST {sessions} refused a login session for user {ep.username!r}: HTTP "
                f"{exc.status}{f' ({detail})' if detail else ''}",
                status=exc.status,
            ) from None
        token = resp.headers.get("x-auth-token")
        if not token:
            log.debug("%s: the login answered no X-Auth-Token: basic auth", ep.name)
            return
        where = resp.headers.get("location") or resp.body.get("@odata.id")
        self._token = token
        self._session_path = urlsplit(where).path if isinstance(where, str) and where else None

    def close(self) -> None:
        """Log out (one DELETE, its failure logged), then close the connection. Never raises:
        closing must not mask a node's result."""
        if self._conn is None:
            return
        if self._token and self._session_path:
            self.requests_made += 1
            try:
                # DELETE is idempotent: sent again if the kept-alive connection turns out closed.
                # Bounded on its own: the node's deadline may be spent, the session is still worth ending.
                bound = time.monotonic() + self.options.connect_timeout + self.options.read_timeout
                raw = self._conn.request(
                    "DELETE", self._session_path, None, self._headers(), idempotent=True, deadline=bound
                )
                if raw.status >= 300 and raw.status != 404:
                    log.warning(
                        "%s: logout answered HTTP %d; the BMC ends the session at its SessionTimeout",
                        self.endpoint.name,
                        raw.status,
                    )
            except (TransportError, BodyTooLarge) as exc:
                log.warning(
                    "%s: logout failed (%s); the BMC ends the session at its SessionTimeout",
                    self.endpoint.name,
                    exc.reason,
                )
        self._token = self._session_path = None
        self._conn.close()

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

    def _headers(self, extra: dict[str, str] | None = None, *, login: bool = False) -> dict[str, str]:
        headers = {"Accept": "application/json", "OData-Version": "4.0"}
        if self._token and not login:
            headers["X-Auth-Token"] = self._token
        else:
            headers["Authorization"] = self._basic
        if extra:
            headers.update(extra)
        return headers

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        args: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        idempotent: bool | None = None,
        login: bool = False,
    ) -> Response:
        if self._conn is None:
            raise RuntimeError("RedfishClient.connect() first")
        idempotent = method == "GET" if idempotent is None else idempotent
        target = _target(path, args)
        payload = json.dumps(body).encode() if body is not None else None
        extra = {**(headers or {}), **({"Content-Type": "application/json"} if payload is not None else {})}
        attempts = 1 + self.options.retries
        renewed = False
        attempt = 0
        while True:
            attempt += 1
            deadline, node_bound = self._deadline_for(method, path)
            self.requests_made += 1
            try:
                raw = self._conn.request(
                    method,
                    target,
                    payload,
                    self._headers(extra, login=login),
                    idempotent=idempotent,
                    deadline=deadline,
                )
            except BodyTooLarge as exc:
                raise LimitExceeded(
                    f"{self.endpoint.url}: {method} {path}: {exc.reason}; a BMC that truly answers this much "
                    "needs a larger --max-body-mib"
                ) from None
            except TransportError as exc:
                err = self._transport_error(exc, method, path, node_bound)
                safe = idempotent or not exc.sent
                retry = not isinstance(err, (TlsVerificationFailed, DeadlineExceeded))
                if attempt < attempts and safe and retry:
                    log.debug(
                        "%s: %s %s failed (%s), retry %d", self.endpoint.name, method, path, err, attempt
                    )
                    self._backoff(attempt, None, method, path)
                    continue
                if not safe:
                    raise AmbiguousAction(
                        f"{err.message}; the {method} may have reached the BMC and is not repeated"
                    ) from None
                raise err from None
            log.debug("%s: %s %s -> %d", self.endpoint.name, method, target, raw.status)
            if raw.status == 401 and self._token and not login and not renewed:
                # The BMC dropped the session (its timeout, a BMC reset): one new login.
                renewed = True
                self._token = self._session_path = None
                self._login()
                attempt -= 1
                continue
            if raw.status in RETRY_STATUSES and idempotent and attempt < attempts:
                self._backoff(attempt, raw.headers.get("retry-after"), method, path)
                continue
            return self._check(raw.status, raw.body, raw.headers, method, path)

    def _deadline_for(self, method: str, path: str) -> tuple[float, bool]:
        """(when this request must be answered by, whether that is the node's deadline); a node
        past its deadline is ``DeadlineExceeded`` before anything is sent."""
        now = time.monotonic()
        deadline = now + self.options.answer_deadline
        node = self._node_deadline
        if node is None or node > deadline:
            return deadline, False
        if node <= now:
            raise self._node_late(method, path)
        return node, True

    def _node_late(self, method: str, path: str) -> DeadlineExceeded:
        return DeadlineExceeded(
            f"{self.endpoint.url}: the BMC's work did not finish within {self.options.node_deadline:g} s "
            f"(--node-deadline); it was at {method} {path}"
        )

    def _backoff(self, attempt: int, retry_after: str | None, method: str, path: str) -> None:
        delay = min(self.options.backoff * 2 ** (attempt - 1), self.options.backoff_max)
        if retry_after and retry_after.isdigit():
            delay = min(float(retry_after), self.options.backoff_max)
        if self._node_deadline is not None and time.monotonic() + delay >= self._node_deadline:
            raise self._node_late(method, path)  # the retry could not be made in time
        self._sleep(delay)

    def _check(self, status: int, data: bytes, headers: dict[str, str], method: str, path: str) -> Response:
        limit = self.options.max_depth
        try:
            body = json.loads(data) if data.strip() else {}
        except RecursionError:  # nested past the interpreter's own limit
            raise self._too_deep(method, path) from None
        except ValueError:
            if 200 <= status < 300 and method == "GET":
                raise UnexpectedResponse(
                    f"{self.endpoint.url}: GET {path} answered HTTP {status} with a body that is not JSON"
                ) from None
            body = {}
        # Only an answer with more brackets than levels allowed can nest too deep: most are not walked.
        if data.count(b"{") + data.count(b"[") > limit and nested_deeper(body, limit):
            raise self._too_deep(method, path)
        if not isinstance(body, dict):
            if method == "GET":
                raise UnexpectedResponse(f"{self.endpoint.url}: GET {path} did not answer a JSON object")
            body = {}
        if 200 <= status < 300 and method == "GET" and isinstance(body.get("error"), dict):
            # DSP0266's error object where the resource should be: not a resource with nothing in it.
            detail = describe_messages(body) or body["error"].get("message") or "no message"
            raise UnexpectedResponse(
                f"{self.endpoint.url}: GET {path} answered HTTP {status} with a Redfish error instead of the "
                f"resource ({detail})",
                status=status,
            )
        if 200 <= status < 300:
            return Response(status, body, headers)
        where = f"{self.endpoint.url}: {method} {path}"
        detail = describe_messages(body)
        detail = f" ({detail})" if detail else ""
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

    def _too_deep(self, method: str, path: str) -> LimitExceeded:
        return LimitExceeded(
            f"{self.endpoint.url}: {method} {path} answered JSON nested deeper than "
            f"{self.options.max_depth} levels (no Redfish resource is): not read"
        )

    def _transport_error(self, exc: TransportError, method: str, path: str, node_bound: bool) -> RedfishError:
        url = self.endpoint.url
        if exc.deadline and node_bound:
            return self._node_late(method, path)
        if exc.deadline:
            return DeadlineExceeded(
                f"{url}: no whole answer to {method} {path} within {self.options.answer_deadline:g} s "
                "(--request-deadline): the BMC sends too slowly"
            )
        if exc.phase == "tls":
            return TlsVerificationFailed(
                f"{url}: {exc.reason}; give the CA that signed the BMC's certificate with --ca-bundle FILE, "
                "or accept an unverified connection knowingly with --insecure"
            )
        if exc.timeout and exc.phase == "connect":
            return Unreachable(f"{url}: no connection within {self.options.connect_timeout:g} s")
        if exc.timeout:
            return Unreachable(
                f"{url}: no answer to {method} {path} within {self.options.read_timeout:g} s (read timeout)"
            )
        return Unreachable(f"{url}: {exc.reason}")

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
    def links_expand(self) -> bool:
        """Whether this service advertises ``$expand=~`` (the resources under ``Links``)."""
        feats = self.root.get("ProtocolFeaturesSupported") or {}
        expand = feats.get("ExpandQuery") if isinstance(feats, dict) else None
        return isinstance(expand, dict) and expand.get("Links") is True

    def get_with_links(self, path: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """A resource and the resources its ``Links`` name, in one request where the service
        advertises ``$expand=~`` (a system with its chassis and manager: three GETs in one):
        (the resource as a plain GET answers it, {path: linked resource}). Elsewhere, or when
        the service refuses the query after all, a plain GET and no linked resources."""
        if not self.links_expand:
            return self.get(path), {}
        try:
            doc = self.get(path, args={"$expand": "~"})
        except (UnexpectedResponse, NotSupported) as exc:
            if exc.status not in (400, 501):
                raise
            return self.get(path), {}
        return split_links(doc)

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
        cap = self.options.max_members
        for _ in range(MAX_PAGES):
            members = doc.get("Members")
            if not isinstance(members, list):
                raise UnexpectedResponse(
                    f"{self.endpoint.url}: {collection} is not a collection (no Members)"
                )
            found += [m for m in members if isinstance(m, dict)]
            if len(found) > cap:  # before any member is read: 100,000 members would be 100,000 GETs
                raise LimitExceeded(
                    f"{self.endpoint.url}: {collection} lists more than {cap} members; none read (a BMC "
                    "that truly has this many needs a larger --max-members)"
                )
            nxt = doc.get("Members@odata.nextLink")
            if not isinstance(nxt, str):
                break
            doc = self.get(nxt)
        return found

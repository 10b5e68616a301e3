"""Vendor-shaped fake BMCs over real HTTP, for tests and benchmarks/discover.py.

One asyncio loop (in a thread, or a process of its own for benchmarks) serves any number of
fake BMCs, each on its own loopback port, each with its own resource tree loaded from
``tests/fixtures/redfish/<name>.json``. The client under test speaks real HTTP/1.1 with basic
auth to it; nothing in the client is mocked.

What a fake BMC does: GET from its tree (``$expand`` as DSP0266 says, and ``$select``, when
the fixture's service root advertises them; 501 when not), basic auth or a session token on
everything but the service root (login: POST to the root's ``Links.Sessions`` with UserName and
Password answers 201, ``X-Auth-Token`` and ``Location``; logout: DELETE of that location;
``sessions = False`` answers the login 405, as a BMC without a SessionService), PATCH merged into
the tree, the actions bringup uses (ComputerSystem.Reset with an optional delay before the
new state shows, VirtualMedia Insert/Eject, Dell LC status and DeleteJobQueue), settings
objects applied at the next reset, and hooks a test can set: queued error statuses, hanging
paths, a per-request latency, forced PATCH/POST errors, a fixed status per path
(``statuses``, also from a fixture's ``_fake``). Every request is logged.

Fixture files are ``{path: resource}`` maps; ``"_extends": "other"`` starts from another
fixture, ``"_delete": [paths]`` removes resources, ``"_fake": {...}`` sets FakeBmc options.

Benchmarks serve hundreds of them from a process of their own: benchmarks/fleet_sim/redfish.py.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import secrets
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from tests.doubles.tls import self_signed_tls  # noqa: F401  # where the tests import it from
from tests.paths import FIXTURES as TESTS_FIXTURES

FIXTURES = TESTS_FIXTURES / "redfish"
PUBLIC = frozenset({"/redfish/v1", "/redfish"})
REASONS = {
    200: "OK",
    201: "Created",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    428: "Precondition Required",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}


def _norm(path: str) -> str:
    path = unquote(path.split("?", 1)[0])
    return path.rstrip("/") or "/"


def load_fixture(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(resources, fake options) of ``fixtures/redfish/<name>.json``, with ``_extends`` applied;
    or of ``fixtures/redfish/<name>/tree.json``, a captured tree (its SOURCE.md says whence)."""
    tree = FIXTURES / name / "tree.json"
    raw = json.loads((tree if tree.is_file() else FIXTURES / f"{name}.json").read_text())
    resources: dict[str, Any] = {}
    fake: dict[str, Any] = {}
    if "_extends" in raw:
        resources, fake = load_fixture(raw["_extends"])
    for path in raw.get("_delete", []):
        resources.pop(_norm(path), None)
    fake.update(raw.get("_fake", {}))
    for path, doc in raw.items():
        # A captured tree keeps the error body a crawler was answered (``{"error": ...}``):
        # the resource is missing, and the fake BMC answers 404 there as the real one did.
        if not path.startswith("_") and not (isinstance(doc, dict) and set(doc) == {"error"}):
            resources[_norm(path)] = doc
    return resources, fake


def error_body(message: str, message_id: str = "Base.1.12.GeneralError", **extra: Any) -> dict[str, Any]:
    return {
        "error": {
            "code": "Base.1.12.GeneralError",
            "message": "A general error has occurred. See ExtendedInfo for more information.",
            "@Message.ExtendedInfo": [
                {"MessageId": message_id, "Message": message, "Severity": "Warning", **extra}
            ],
        }
    }


def _merge(dst: dict[str, Any], src: dict[str, Any]) -> None:
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(dst.get(key), dict):
            _merge(dst[key], value)
        else:
            dst[key] = value


def _expand_refused(value: str, advertised: dict[str, Any]) -> tuple[int, str] | None:
    """(status, why) when ``$expand=value`` is malformed (400) or not what the service root
    advertises in ProtocolFeaturesSupported.ExpandQuery (501), as DSP0266 asks; else None."""
    kind, paren, rest = value.partition("(")
    if kind not in ("*", ".", "~") or (paren and not rest.startswith("$levels=")):
        return 400, f"$expand={value} is malformed"
    flag = {"*": "ExpandAll", ".": "NoLinks", "~": "Links"}[kind]
    if not advertised.get(flag):
        return 501, f"$expand={kind} is not supported"
    if paren:
        levels = rest.removeprefix("$levels=").rstrip(")")
        if not levels.isdigit() or not rest.endswith(")") or int(levels) < 1:
            return 400, f"$expand={value} is malformed"
        if not advertised.get("Levels") or int(levels) > int(advertised.get("MaxLevels") or 1):
            return 501, f"$levels={levels} is not supported"
    return None


class Request(NamedTuple):
    method: str
    path: str
    body: Any
    query: str
    auth: str = ""  # "token" (X-Auth-Token), "basic" (Authorization) or "" (none)


class FakeBmc:
    """One BMC's state and behaviour. Hooks are plain attributes a test may set."""

    def __init__(
        self,
        resources: dict[str, Any],
        *,
        username: str = "root",
        password: str = "calvin",
        latency: float = 0.0,
        power_delay: float = 0.0,
        require_boot_mode: bool = False,
        settings_refuse_boot: bool = False,
        ignore_graceful: bool = False,
        require_if_match: bool = False,
        lc_status: dict[str, Any] | None = None,
        statuses: dict[str, int] | None = None,
        sessions: bool = True,
        **_: Any,
    ):
        self.resources = {_norm(k): copy.deepcopy(v) for k, v in resources.items()}
        self.username, self.password = username, password
        self.latency = latency
        self.power_delay = power_delay
        self.require_boot_mode = require_boot_mode
        self.settings_refuse_boot = settings_refuse_boot
        self.ignore_graceful = ignore_graceful  # an OS that ignores the ACPI power button
        self.require_if_match = require_if_match  # PATCH without If-Match: 428
        self.lc_status = lc_status or {
            "LCStatus": "Ready",
            "RTStatus": "Ready",
            "ServerStatus": "OutOfPOST",
            "Status": "Ready",
            "TelemetryStatus": "Ready",
        }
        self.requests: list[Request] = []
        self.queued: dict[str, list[int]] = {}  # path -> statuses to answer next (then normal)
        # path -> the status every request there answers (a fixture's firmware quirk, e.g. 405)
        self.statuses: dict[str, int] = {_norm(k): v for k, v in (statuses or {}).items()}
        self.hang: set[str] = set()  # paths that never answer
        self.lose_answer: set[str] = set()  # paths whose request is carried out, then never answered
        self.patch_errors: dict[str, tuple[int, dict[str, Any]]] = {}
        self.post_errors: dict[str, tuple[int, dict[str, Any]]] = {}
        self.sessions = sessions  # False: the login answers 405 (no SessionService)
        self.tokens: dict[str, str] = {}  # live session token -> its path
        self.logins = 0  # sessions ever opened
        self.connections = 0  # TCP connections accepted (keep-alive: one per client, ideally)
        self.keep_alive = True  # False: close every connection after its answer, without a word
        self.redirects: dict[str, str] = {}  # path -> the Location a 301 there sends the client to
        self._pending_power: dict[str, tuple[str, float]] = {}
        # Serve GETs from a cache of serialized answers (benchmarks: hundreds of BMCs on one
        # thread). Any PATCH/POST clears it; a test that edits ``resources`` directly must not set it.
        self.cache_gets = False
        self._cache: dict[tuple[str, str], bytes] = {}
        self.port = 0
        self.scheme = "http"
        self.host = "127.0.0.1"

    @classmethod
    def from_fixture(cls, name: str, **overrides: Any) -> FakeBmc:
        resources, fake = load_fixture(name)
        return cls(resources, **{**fake, **overrides})

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def calls(
        self, method: str | None = None, contains: str = "", *, sessions: bool = False
    ) -> list[Request]:
        """Requests by method and path; the session login and logout only with ``sessions``
        (a test asking for POSTs means the actions)."""
        where = self.sessions_path
        return [
            r
            for r in self.requests
            if (method is None or r.method == method)
            and contains in r.path
            and (sessions or where is None or not (r.path == where or r.path.startswith(where + "/")))
        ]

    # -- request handling -----------------------------------------------------------------

    def _authorized(self, headers: dict[str, str]) -> bool:
        if headers.get("x-auth-token") in self.tokens:
            return True
        want = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return headers.get("authorization") == f"Basic {want}"

    @property
    def sessions_path(self) -> str | None:
        ref = ((self.resources.get("/redfish/v1") or {}).get("Links") or {}).get("Sessions") or {}
        return _norm(ref["@odata.id"]) if isinstance(ref.get("@odata.id"), str) else None

    def _login(self, parsed: Any) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """POST to the sessions collection: no authorization needed, the credentials are the body."""
        path = self.sessions_path or ""
        if path in self.post_errors:
            status, err = self.post_errors[path]
            return status, err, {}
        if not self.sessions:
            return 405, error_body(f"POST not allowed on {path}"), {}
        body = parsed if isinstance(parsed, dict) else {}
        if (body.get("UserName"), body.get("Password")) != (self.username, self.password):
            return 401, error_body("Login failed: invalid credentials", "Base.1.12.NoValidSession"), {}
        self.logins += 1
        token = secrets.token_hex(16)
        where = f"{path}/{self.logins}"
        self.tokens[token] = where
        doc = {"@odata.id": where, "Id": str(self.logins), "UserName": self.username}
        return 201, doc, {"X-Auth-Token": token, "Location": where}

    def _logout(
        self, path: str, headers: dict[str, str]
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        token = next((t for t, where in self.tokens.items() if where == path), None)
        if token is None:
            return 404, error_body(f"no session at {path}", "Base.1.12.ResourceMissingAtURI"), {}
        del self.tokens[token]
        return 204, None, {}

    async def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        path = _norm(target)
        query = parse_qs(urlsplit(target).query)
        parsed: Any = None
        if body:
            try:
                parsed = json.loads(body)
            except ValueError:
                return 400, error_body("malformed JSON"), {}
        auth = "token" if "x-auth-token" in headers else "basic" if "authorization" in headers else ""
        self.requests.append(Request(method, path, parsed, urlsplit(target).query, auth))
        if self.latency:
            await asyncio.sleep(self.latency)
        if path in self.hang:
            await asyncio.sleep(3600)
        answer = self._answer(method, path, query, headers, parsed)
        if path in self.lose_answer:
            await asyncio.sleep(3600)
        return answer

    def _answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], parsed: Any
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        if method == "POST" and path == self.sessions_path:
            return self._login(parsed)
        if path not in PUBLIC and not self._authorized(headers):
            return (
                401,
                error_body("Unable to authenticate: invalid credentials", "Base.1.12.InsufficientPrivilege"),
                {},
            )
        if path in self.redirects:
            return 301, None, {"Location": self.redirects[path]}
        if path in self.statuses:
            status = self.statuses[path]
            return status, error_body(f"{REASONS.get(status, 'Error')} at {path}"), {}
        if self.queued.get(path):
            return (
                self.queued[path].pop(0),
                error_body("Service temporarily unavailable"),
                {"Retry-After": "0"},
            )
        self._apply_power()
        if method == "DELETE":
            return self._logout(path, headers)
        if method != "GET":
            self._cache.clear()
        if method == "GET":
            return self._get(path, query)
        if method == "PATCH":
            return self._patch(path, parsed or {}, headers)
        if method == "POST":
            return self._post(path, parsed or {})
        return 405, error_body(f"{method} not allowed"), {}

    def _get(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        key = (path, urlencode(sorted((k, v[0]) for k, v in query.items() if k.startswith("$"))))
        if self.cache_gets and key in self._cache:
            payload = self._cache[key]
            return 200, payload, {"ETag": f'W/"{zlib.crc32(payload)}"'}
        doc = self.resources.get(path)
        if doc is None:
            missing = error_body(
                f"The resource at the URI {path} was not found.", "Base.1.12.ResourceMissingAtURI"
            )
            return 404, missing, {}
        features = (self.resources.get("/redfish/v1") or {}).get("ProtocolFeaturesSupported") or {}
        if "$expand" in query:
            refused = _expand_refused(query["$expand"][0], features.get("ExpandQuery") or {})
            if refused:
                return refused[0], error_body(refused[1], "Base.1.12.QueryNotSupported"), {}
            doc = self._expand(doc, query["$expand"][0])
        if "$select" in query:
            if not features.get("SelectQuery"):
                return 501, error_body("$select is not supported", "Base.1.12.QueryNotSupported"), {}
            keep = {f.strip() for f in query["$select"][0].split(",")}
            doc = {k: v for k, v in doc.items() if k in keep or k.startswith("@odata.")}
        payload = json.dumps(doc).encode()
        if self.cache_gets:
            self._cache[key] = payload
        return 200, payload, {"ETag": f'W/"{zlib.crc32(payload)}"'}

    def _expand(self, doc: Any, value: str, in_links: bool = False, levels: int | None = None) -> Any:
        """DSP0266 $expand: ``*`` every reference, ``.`` those not under ``Links``, ``~`` those
        under ``Links``; ``($levels=n)`` cascades n levels (1 when absent). A reference is an
        object holding only ``@odata.id``; the resource's own ``@odata.id`` is not one."""
        kind, _, rest = value.partition("(")
        if levels is None:
            levels = int(rest.removeprefix("$levels=").rstrip(")")) if rest else 1
        if isinstance(doc, list):
            return [self._expand(d, value, in_links, levels) for d in doc]
        if not isinstance(doc, dict):
            return doc
        if set(doc) == {"@odata.id"} and isinstance(doc["@odata.id"], str):
            wanted = kind == "*" or (kind == "~") == in_links
            target = self.resources.get(_norm(doc["@odata.id"]))
            if not wanted or target is None:
                return doc
            return self._expand(target, value, False, levels - 1) if levels > 1 else copy.deepcopy(target)
        return {k: self._expand(v, value, in_links or k == "Links", levels) for k, v in doc.items()}

    def _patch(
        self, path: str, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        if path in self.patch_errors:
            status, err = self.patch_errors[path]
            return status, err, {}
        doc = self.resources.get(path)
        if doc is None:
            return 405, error_body(f"PATCH not allowed on {path}"), {}
        if self.require_if_match and "if-match" not in headers:
            return 428, error_body("If-Match header required", "Base.1.12.PreconditionRequired"), {}
        boot = body.get("Boot") if isinstance(body.get("Boot"), dict) else None
        if boot is not None:
            if self.require_boot_mode and "BootSourceOverrideMode" not in boot:
                return 400, error_body("BootSourceOverrideMode is required", "Base.1.12.PropertyMissing"), {}
            if self.settings_refuse_boot and path.endswith("/Settings"):
                return (
                    400,
                    error_body(
                        "The property BootSourceOverrideTarget is not in the list of valid properties for the resource.",
                        "Base.1.12.PropertyUnknown",
                    ),
                    {},
                )
            allowed = (doc.get("Boot") or {}).get("BootSourceOverrideTarget@Redfish.AllowableValues")
            target = boot.get("BootSourceOverrideTarget")
            if allowed and target not in allowed:
                return (
                    400,
                    error_body(f"{target} is not an allowed value", "Base.1.12.PropertyValueNotInList"),
                    {},
                )
        _merge(doc, body)
        return 200, copy.deepcopy(doc), {}

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        if path in self.post_errors:
            status, err = self.post_errors[path]
            return status, err, {}
        owner, _, action = path.partition("/Actions/")
        action = action.split("/")[-1]
        handler: Callable[[str, dict[str, Any]], tuple[int, dict[str, Any] | None]] | None = {
            "ComputerSystem.Reset": self._reset,
            "VirtualMedia.InsertMedia": self._insert,
            "VirtualMedia.EjectMedia": self._eject,
            "DellLCService.GetRemoteServicesAPIStatus": lambda o, b: (200, dict(self.lc_status)),
            "DellJobService.DeleteJobQueue": self._delete_jobs,
        }.get(action)
        if handler is None or (
            action.startswith(("ComputerSystem", "VirtualMedia")) and owner not in self.resources
        ):
            return 404, error_body(f"no action at {path}"), {}
        status, doc = handler(owner, body)
        return status, doc, {}

    # -- actions ------------------------------------------------------------------------------

    def _reset(self, system: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        kind = body.get("ResetType")
        allowed = ((self.resources[system].get("Actions") or {}).get("#ComputerSystem.Reset") or {}).get(
            "ResetType@Redfish.AllowableValues"
        )
        if allowed and kind not in allowed:
            return 400, error_body(f"ResetType {kind} not supported", "Base.1.12.ActionParameterNotSupported")
        if kind in ("On", "ForceOn"):
            target = "On"
        elif kind in ("ForceOff", "GracefulShutdown"):
            target = "Off"
        elif kind in ("ForceRestart", "GracefulRestart", "PowerCycle"):
            target = "On"
        else:
            return 400, error_body(f"ResetType {kind} not supported", "Base.1.12.ActionParameterNotSupported")
        if kind == "GracefulShutdown" and self.ignore_graceful:
            return 204, None
        if target == "On":
            self._apply_settings(system)
        if self.power_delay > 0:
            self._pending_power[system] = (target, time.monotonic() + self.power_delay)
        else:
            self.resources[system]["PowerState"] = target
        return 204, None

    def _apply_power(self) -> None:
        now = time.monotonic()
        for system, (state, when) in list(self._pending_power.items()):
            if now >= when:
                self.resources[system]["PowerState"] = state
                del self._pending_power[system]
                self._cache.clear()

    def _apply_settings(self, system: str) -> None:
        """iDRAC 10 semantics: values PATCHed to the settings object take effect at a reset."""
        settings = ((self.resources[system].get("@Redfish.Settings") or {}).get("SettingsObject") or {}).get(
            "@odata.id"
        )
        pending = self.resources.get(_norm(settings)) if settings else None
        if pending and isinstance(pending.get("Boot"), dict):
            _merge(self.resources[system].setdefault("Boot", {}), pending["Boot"])
            pending["Boot"] = {}

    def _insert(self, media: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        doc = self.resources[media]
        if doc.get("Inserted"):
            return 400, error_body("Virtual Media is already attached", "IDRAC.2.8.VRM0012")
        if not body.get("Image"):
            return 400, error_body("Image is required", "Base.1.12.ActionParameterMissing")
        doc.update(Image=body["Image"], ImageName=body["Image"].rsplit("/", 1)[-1], Inserted=True)
        doc["WriteProtected"] = body.get("WriteProtected", True)
        doc["ConnectedVia"] = "URI"
        return 204, None

    def _eject(self, media: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        self.resources[media].update(Image=None, ImageName=None, Inserted=False, ConnectedVia="NotConnected")
        return 204, None

    def _delete_jobs(self, service: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | None]:
        if body.get("JobID") not in ("JID_CLEARALL", "JID_CLEARALL_FORCE"):
            return 400, error_body("unknown JobID")
        for path, doc in list(self.resources.items()):
            if path.endswith("/Jobs") and isinstance(doc.get("Members"), list):
                for member in doc["Members"]:
                    self.resources.pop(_norm(member["@odata.id"]), None)
                doc["Members"], doc["Members@odata.count"] = [], 0
        return 200, {
            "@Message.ExtendedInfo": [
                {"MessageId": "IDRAC.2.8.SUP020", "Message": "Successfully Completed Request"}
            ]
        }


class FakeBmcServer:
    """Serve FakeBmcs on loopback, one port each, from a background event loop thread."""

    def __init__(self, bmcs: list[FakeBmc], *, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None):
        self.bmcs, self.host, self.tls = bmcs, host, tls
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-bmcs", daemon=True)
        self._servers: list[asyncio.base_events.Server] = []

    def __enter__(self) -> FakeBmcServer:
        self.start()
        return self

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop the BMCs run on: read their counters there (benchmarks/fleet_sim/redfish.py)."""
        return self._loop

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)

    async def _start(self) -> None:
        for bmc in self.bmcs:
            server = await asyncio.start_server(
                lambda r, w, bmc=bmc: self._serve(bmc, r, w), self.host, 0, ssl=self.tls, backlog=1024
            )
            bmc.host, bmc.port = self.host, server.sockets[0].getsockname()[1]
            bmc.scheme = "https" if self.tls else "http"
            self._servers.append(server)

    def stop(self) -> None:
        async def close() -> None:
            for server in self._servers:
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    async def _serve(self, bmc: FakeBmc, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        bmc.connections += 1
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = h.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                status, doc, extra = await bmc.handle(method, target, headers, body)
                payload = (
                    doc if isinstance(doc, bytes) else json.dumps(doc).encode() if doc is not None else b""
                )
                head = [
                    f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
                    f"Content-Length: {len(payload)}",
                ]
                if doc is not None:
                    head.append("Content-Type: application/json")
                head += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
                await writer.drain()
                if headers.get("connection", "").lower() == "close" or not bmc.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            writer.close()


@contextmanager
def serving(*bmcs: FakeBmc, tls: ssl.SSLContext | None = None) -> Iterator[tuple[FakeBmc, ...]]:
    """Serve ``bmcs`` for the duration of a ``with`` block."""
    with FakeBmcServer(list(bmcs), tls=tls):
        yield bmcs

"""One kept-alive HTTP(S) connection to one BMC: the bytes on the wire, nothing Redfish.

The standard library's ``http.client`` costs about a quarter of the client CPU per request
that requests + urllib3 + the DMTF library did (0.08 ms against 0.35 ms for a 3 kB GET on
the development machine), and at 1,024 BMCs the controller is CPU-bound on one core (the
GIL). Each BMC is worked by one thread, one request at a time, so one connection per BMC is
all the pooling there is to do.

Failures are ``TransportError``: what went wrong in words, and whether the request surely
never left this machine (``sent`` False: the connection or TLS handshake failed), which is
what decides if an action may be tried again. A connection idle for a while is opened afresh
before an action: a BMC that closed it would otherwise make the action fail after it may have
been sent. A GET (or a request the caller calls idempotent) that finds its reused
connection closed is sent once more on a new one, as every HTTP client does; an action is not.
"""

from __future__ import annotations

import gzip
import http.client
import os
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

# A connection last used longer ago than this is not trusted with a request: BMCs close
# idle keep-alive connections after a few seconds (iDRAC: 5 s to 60 s depending on version).
FRESH_SECONDS = 2.0
MAX_REDIRECTS = 3

Phase = Literal["connect", "tls", "send", "read"]


class TransportError(Exception):
    """The request got no HTTP answer. ``phase``: where it failed; ``sent``: False only when
    the request surely did not reach the BMC; ``timeout``: the connect or read timeout ran out."""

    def __init__(self, reason: str, *, phase: Phase, sent: bool, timeout: bool = False):
        super().__init__(reason)
        self.reason, self.phase, self.sent, self.timeout = reason, phase, sent, timeout


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes


_contexts: dict[tuple[str | None, int, bool], ssl.SSLContext] = {}
_contexts_lock = threading.Lock()


def tls_context(cafile: str | None, verify: bool) -> ssl.SSLContext:
    """One shared context per trust setting: loading a CA bundle costs ~10 ms of CPU, once per
    connection in requests, once per process here (contexts are safe to share between threads)."""
    try:
        changed = os.stat(cafile).st_mtime_ns if cafile else 0  # a bundle rewritten is read again
    except OSError:
        changed = -1  # the load below says what is wrong with it
    key = (cafile, changed, verify)
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            if verify:
                ctx = ssl.create_default_context(cafile=cafile)
            else:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            _contexts[key] = ctx
        return ctx


def _errno_text(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host ({exc.strerror or exc})"
    if exc.errno is not None and exc.strerror:
        return f"[Errno {exc.errno}] {exc.strerror}"
    return str(exc) or type(exc).__name__


class Connection:
    """A keep-alive connection to ``scheme://host:port``, opened on first use."""

    def __init__(
        self,
        scheme: str,
        host: str,
        port: int | None,
        *,
        connect_timeout: float,
        read_timeout: float,
        tls: ssl.SSLContext | None = None,
    ):
        self.scheme, self.host = scheme, host
        self.port = port or (443 if scheme == "https" else 80)
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.tls = tls
        self._conn: http.client.HTTPConnection | None = None
        self._last_used = 0.0

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _open(self) -> http.client.HTTPConnection:
        self.close()
        if self.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self.host, self.port, timeout=self.connect_timeout, context=self.tls
            )
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.connect_timeout)
        try:
            conn.connect()
        except ssl.SSLCertVerificationError as exc:
            conn.close()
            raise TransportError(exc.verify_message or str(exc), phase="tls", sent=False) from None
        except ssl.SSLError as exc:
            conn.close()
            raise TransportError(
                f"TLS handshake failed: {exc.reason or exc}", phase="tls", sent=False
            ) from None
        except TimeoutError:
            conn.close()
            raise TransportError("connect timeout", phase="connect", sent=False, timeout=True) from None
        except OSError as exc:
            conn.close()
            raise TransportError(_errno_text(exc), phase="connect", sent=False) from None
        assert conn.sock is not None
        conn.sock.settimeout(self.read_timeout)
        self._conn = conn
        return conn

    def request(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: dict[str, str],
        *,
        idempotent: bool = False,
    ) -> RawResponse:
        """One request and its whole answer. Redirects to the same BMC are followed for GETs.
        ``idempotent`` (GETs always): sent again once when a kept-alive connection turns out closed."""
        for _ in range(MAX_REDIRECTS + 1):
            resp = self._exchange(method, target, body, headers, idempotent or method == "GET")
            location = self._same_origin(resp.headers.get("location", ""))
            if method != "GET" or resp.status not in (301, 302, 307, 308) or location is None:
                return resp
            target = location
        return resp

    def _same_origin(self, location: str) -> str | None:
        """The path (and query) of a redirect to this same BMC; None for anywhere else."""
        if location.startswith("/"):
            return location
        parts = urlsplit(location)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if (parts.scheme, parts.hostname, port) != (self.scheme, self.host, self.port) or not parts.path:
            return None
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _exchange(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str], idempotent: bool
    ) -> RawResponse:
        reused = self._conn is not None
        # An action is never sent on a connection idle long enough for the BMC to drop it as we
        # send (it could not be sent again); a GET is, and is resent if it was dropped.
        stale = not idempotent and time.monotonic() - self._last_used > FRESH_SECONDS
        if self._conn is None or stale or self._dropped():
            reused = False
            self._open()
        try:
            return self._send(method, target, body, headers)
        except TransportError as exc:
            # The BMC closed a kept-alive connection: nothing was answered, a GET is safe to resend.
            if not (reused and idempotent and not exc.timeout):
                raise
        self._open()
        return self._send(method, target, body, headers)

    def _dropped(self) -> bool:
        """Whether the BMC closed the idle connection (it is readable before we asked anything:
        end of file, or a stray byte no request is waiting for)."""
        sock = self._conn.sock if self._conn is not None else None
        if sock is None:
            return True
        try:
            return bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def _send(self, method: str, target: str, body: bytes | None, headers: dict[str, str]) -> RawResponse:
        conn = self._conn
        assert conn is not None
        phase: Phase = "send"
        try:
            conn.request(method, target, body=body, headers=headers)
            phase = "read"
            resp = conn.getresponse()
            data = resp.read()
        except TimeoutError:
            self.close()
            raise TransportError(
                "read timeout" if phase == "read" else "send timeout", phase=phase, sent=True, timeout=True
            ) from None
        except (http.client.HTTPException, OSError) as exc:
            self.close()
            why = (
                "the BMC closed the connection without an answer"
                if isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))
                else (
                    _errno_text(exc)
                    if isinstance(exc, OSError)
                    else f"bad HTTP answer ({type(exc).__name__})"
                )
            )
            raise TransportError(why, phase=phase, sent=True) from None
        answer = {k.lower(): v for k, v in resp.getheaders()}
        if answer.get("content-encoding") == "gzip" and data:
            data = gzip.decompress(data)
        if resp.will_close:
            self.close()
        self._last_used = time.monotonic()
        return RawResponse(resp.status, answer, data)

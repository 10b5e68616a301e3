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

Bounds (docs/redfish.md, "Bounds"): an answer is read in pieces and refused (``BodyTooLarge``)
once it passes ``max_body`` bytes on the wire, or once its gzip decompresses past ``max_body``
(decompressed piece by piece, never whole: a 1 MB gzip bomb would be 1 GiB). Every request
has a deadline: each receive waits at most what is left of it (the read timeout alone bounds
one receive, and a BMC sending a byte a second would be read for ever).
"""

from __future__ import annotations

import http.client
import io
import os
import select
import socket
import ssl
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

# A connection last used longer ago than this is not trusted with a request: BMCs close
# idle keep-alive connections after a few seconds (iDRAC: 5 s to 60 s depending on version).
FRESH_SECONDS = 2.0
MAX_REDIRECTS = 3
CHUNK = 1 << 16  # bytes read from the socket at a time
MiB = 1 << 20

Phase = Literal["connect", "tls", "send", "read"]


class TransportError(Exception):
    """The request got no HTTP answer. ``phase``: where it failed; ``sent``: False only when
    the request surely did not reach the BMC; ``timeout``: the connect or read timeout ran out;
    ``deadline``: the request's deadline did."""

    def __init__(
        self, reason: str, *, phase: Phase, sent: bool, timeout: bool = False, deadline: bool = False
    ):
        super().__init__(reason)
        self.reason, self.phase, self.sent, self.timeout = reason, phase, sent, timeout
        self.deadline = deadline


class BodyTooLarge(Exception):
    """The answer passed ``max_body``; ``reason`` says how (the connection is closed)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _DeadlinePassed(TimeoutError):
    """A receive that could not wait: the request's deadline is (nearly) spent."""


def size_text(n: int) -> str:
    return f"{n / MiB:g} MiB" if n >= MiB and n % (MiB // 4) == 0 else f"{n} bytes"


class _DeadlineReader(io.RawIOBase):
    """The socket as http.client reads an answer from it (status line, headers, body): each
    receive waits at most the read timeout, and no longer than what is left to the deadline."""

    def __init__(self, sock: socket.socket, owner: Connection):
        super().__init__()
        self._sock, self._owner = sock, owner
        # The socket's own reader keeps it open while the answer is read: http.client closes
        # the connection as soon as the headers say it will close, before the body is read.
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int | None:  # type: ignore[override]
        cut = self._owner._bound_socket(self._sock)
        try:
            return self._raw.readinto(buf)
        except TimeoutError:
            if cut:
                raise _DeadlinePassed() from None
            raise

    def close(self) -> None:
        self._raw.close()
        super().close()


class _ReaderSocket:
    """What http.client's response is built on: it only calls ``makefile("rb")``."""

    def __init__(self, sock: socket.socket, owner: Connection):
        self._sock, self._owner = sock, owner

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._owner))


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
        max_body: int = 8 * MiB,
    ):
        self.scheme, self.host = scheme, host
        self.port = port or (443 if scheme == "https" else 80)
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self.tls = tls
        self.max_body = max_body
        self._conn: http.client.HTTPConnection | None = None
        self._last_used = 0.0
        self._deadline: float | None = None  # monotonic time the request under way must end by

    def _left(self) -> float | None:
        return None if self._deadline is None else self._deadline - time.monotonic()

    def _bound_socket(self, sock: socket.socket) -> bool:
        """Set ``sock``'s timeout for one operation: the read timeout, or what is left to the
        deadline where that is less (True then). No time left: ``_DeadlinePassed``."""
        left = self._left()
        if left is None or left >= self.read_timeout:
            sock.settimeout(self.read_timeout)
            return False
        if left <= 0:
            raise _DeadlinePassed()
        sock.settimeout(left)
        return True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _open(self) -> http.client.HTTPConnection:
        self.close()
        left = self._left()
        if left is not None and left <= 0:
            raise TransportError("deadline", phase="connect", sent=False, timeout=True, deadline=True)
        # The connect and the TLS handshake are each bounded as a whole by the socket timeout.
        timeout = self.connect_timeout if left is None else min(self.connect_timeout, left)
        if self.scheme == "https":
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=self.tls
            )
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
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
            late = timeout < self.connect_timeout
            raise TransportError(
                "deadline" if late else "connect timeout",
                phase="connect",
                sent=False,
                timeout=True,
                deadline=late,
            ) from None
        except OSError as exc:
            conn.close()
            raise TransportError(_errno_text(exc), phase="connect", sent=False) from None
        assert conn.sock is not None
        conn.sock.settimeout(self.read_timeout)
        # Answers are read through the deadline (the instance attribute is what getresponse() builds).
        conn.response_class = lambda sock, *args, **kw: http.client.HTTPResponse(  # type: ignore[method-assign]
            _ReaderSocket(sock, self), *args, **kw
        )
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
        deadline: float | None = None,
    ) -> RawResponse:
        """One request and its whole answer. Redirects to the same BMC are followed for GETs.
        ``idempotent`` (GETs always): sent again once when a kept-alive connection turns out closed.
        ``deadline`` (``time.monotonic()``): when the whole of it, redirects included, must be done
        (``TransportError`` with ``deadline`` set past it). An answer past ``max_body``: ``BodyTooLarge``."""
        self._deadline = deadline
        try:
            for _ in range(MAX_REDIRECTS + 1):
                resp = self._exchange(method, target, body, headers, idempotent or method == "GET")
                location = self._same_origin(resp.headers.get("location", ""))
                if method != "GET" or resp.status not in (301, 302, 307, 308) or location is None:
                    return resp
                target = location
            return resp
        finally:
            self._deadline = None

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
            if conn.sock is not None:
                self._bound_socket(conn.sock)  # sendall() is bounded as a whole by the timeout
            conn.request(method, target, body=body, headers=headers)
            phase = "read"
            resp = conn.getresponse()
            data = self._read_body(resp)
        except _DeadlinePassed:
            self.close()
            raise TransportError(
                "deadline", phase=phase, sent=phase == "read", timeout=True, deadline=True
            ) from None
        except TimeoutError:
            self.close()
            raise TransportError(
                "read timeout" if phase == "read" else "send timeout", phase=phase, sent=True, timeout=True
            ) from None
        except BodyTooLarge:
            self.close()
            raise
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
        if resp.will_close:
            self.close()
        if answer.get("content-encoding") == "gzip" and data:
            data = self._gunzip(data)
        self._last_used = time.monotonic()
        return RawResponse(resp.status, answer, data)

    def _read_body(self, resp: http.client.HTTPResponse) -> bytes:
        """The answer's body, read a piece at a time (``read1``: one receive each, so each waits
        only as long as the deadline allows) and refused as soon as it passes ``max_body``."""
        cap = self.max_body
        if resp.length is not None and resp.length > cap:
            raise BodyTooLarge(
                f"the answer is {resp.length} bytes (Content-Length), over the {size_text(cap)} cap"
            )
        parts, total = [], 0
        while chunk := resp.read1(CHUNK):
            total += len(chunk)
            if total > cap:
                raise BodyTooLarge(f"the answer is over the {size_text(cap)} cap")
            parts.append(chunk)
        if resp.length:  # the BMC closed before the Content-Length it announced
            raise http.client.IncompleteRead(b"".join(parts), resp.length)
        resp.close()  # done with: the kept-alive connection takes the next request
        return b"".join(parts)

    def _gunzip(self, data: bytes) -> bytes:
        """``data`` decompressed, never past ``max_body`` (+1 byte: enough to know it is over)."""
        cap, out, left = self.max_body, [], data
        size = 0
        while left:  # a gzip file may hold several members, one after the other (RFC 1952)
            unpack = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                piece = unpack.decompress(left, cap + 1 - size)
            except zlib.error as exc:
                raise TransportError(f"bad gzip answer ({exc})", phase="read", sent=True) from None
            size += len(piece)
            if size > cap:
                raise BodyTooLarge(f"the answer decompressed is over the {size_text(cap)} cap (gzip)")
            if not unpack.eof:
                raise TransportError("bad gzip answer (cut short)", phase="read", sent=True)
            out.append(piece)
            left = unpack.unused_data
        return b"".join(out)

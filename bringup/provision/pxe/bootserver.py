"""The boot HTTP server: iPXE scripts per node state, installer configuration, phone-home.

    GET  /boot.ipxe                       the DHCP boot file for iPXE: chains to /node.ipxe with
                                          the firmware's own view (MAC, SMBIOS UUID and serial)
    GET  /node.ipxe?mac=...               the script for this node's state (agent/install/local)
    GET  /files/<name>                    the agent kernel and initrd
    GET  /cloud-init/<mac>/<token>/user-data  autoinstall + cloud-init for this node (meta-data,
                                          vendor-data likewise)
    POST /phone-home/<mac>                the node's own report (JSON: MACs, serial, UUID, disks)
    POST /progress/<mac>                  a progress line (text) or an installer event (JSON)
    POST /installed/<mac>                 the installer finished: boot this node locally from now on

It knows nothing about the fleet store or Redfish: the PXE backend tells it, per MAC, what to
serve, and reads back what the nodes said.

Hostile or broken clients (anyone on the provisioning network can connect):

- A connection must deliver its whole request within ``request_timeout`` s of being accepted,
  else it is closed (a body cut short or late: 400/408, recorded as a rejected attempt).
- Idle connections cost no thread: one acceptor thread holds them in a selector until they
  send something, and closes them at their deadline. At most ``max_workers`` threads handle
  requests. Past ``max_connections`` open connections, a new one is accepted and closed at
  once rather than left in the listen backlog, where it would delay the nodes' own SYNs.
- One request per connection (``Connection: close``): a deadline per connection is then a
  deadline per request.
- Phone-home, progress, installed and the cloud-init seed are answered only for a MAC being
  provisioned, and only to the address its reservation names (``NodeBoot.address``; None in
  proxy-DHCP mode, where the site's DHCP server chooses and the address cannot be checked).
  A report naming another ``client``, ``boot_mac`` or ``ip`` is refused too. Each refusal is
  recorded with the caller's address (``NodeSeen.rejected``) and said as a progress line.
- Each attempt has a token (``NodeBoot.token``, see ``tokens``): the node's iPXE script carries
  it (served only to the reserved address), and phone-home, progress and installed must bring
  it back (``X-Bringup-Token`` header or ``?token=``), the cloud-init seed in its path. A call
  without it, with a wrong one or with another node's is refused (403) and recorded; the value
  is never. ``end_attempt`` voids it.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import selectors
import shutil
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from bringup.provision.pxe import reports, scripts, tokens

MAX_BODY = 1 << 20  # a report is a few KB; refuse anything silly
REQUEST_TIMEOUT = 20.0  # s from accept to the whole request read; the nodes' requests are tiny
MAX_WORKERS = 32
MAX_CONNECTIONS = 512
MAX_REJECTED = 100  # per MAC; then the oldest go (a flood must not grow memory)


@dataclass(frozen=True)
class NodeBoot:
    """What the boot server serves one node."""

    key: str
    hostname: str
    mac: str
    mode: str  # agent | install | local
    # iPXE script for ``mode`` (agent/install; ``local`` needs none) and the installer's
    # user-data: both carry the attempt's token, so neither is printed.
    script: str = field(repr=False)
    user_data: str = field(default="", repr=False)
    meta_data: str = ""
    # The address its reservation gives it, the only peer it may be heard from; None in
    # proxy-DHCP mode (the site's DHCP server chooses: not checked). Required, so that no
    # caller leaves the check off by omission.
    address: str | None = field(kw_only=True)
    # This attempt's token (``tokens.new_token``); '' once the attempt ended. Never printed.
    token: str = field(kw_only=True, repr=False)


@dataclass
class NodeSeen:
    """What the boot server heard from one node (times are the server's monotonic clock)."""

    ipxe: list[tuple[float, dict[str, str]]] = field(default_factory=list)
    reports: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    progress: list[tuple[float, str]] = field(default_factory=list)
    installed_at: float | None = None
    # Calls refused (wrong peer, forged fields, a body cut short): {at, what, peer, reason}.
    rejected: list[dict[str, Any]] = field(default_factory=list)


ProgressHook = Callable[[str, str], None]  # (mac, line)


class BootServer:
    def __init__(
        self,
        address: str,
        port: int,
        files_dir: Path | None = None,
        on_progress: ProgressHook | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        request_timeout: float = REQUEST_TIMEOUT,
        max_workers: int = MAX_WORKERS,
        max_connections: int = MAX_CONNECTIONS,
    ):
        """Binds at once: an address or port that cannot be had raises OSError here."""
        self.files_dir = files_dir
        self.on_progress = on_progress
        self.request_timeout = request_timeout
        self.max_workers = max_workers
        self.max_connections = max_connections
        self._clock = clock
        self._nodes: dict[str, NodeBoot] = {}
        self._seen: dict[str, NodeSeen] = {}
        self._strays: deque[dict[str, Any]] = deque(maxlen=MAX_REJECTED)  # refused, naming no node
        self._cond = threading.Condition()
        self._listener = _listen(address, port)
        self.address, self.port = self._listener.getsockname()[:2]
        self._handler = _handler(self)
        self._busy = 0
        self.counts = {"served": 0, "idle_closed": 0, "refused": 0}  # connections, for the curious
        self._stopping = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.address}]" if ":" in str(self.address) else self.address
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix="boot-server")
        self._thread = threading.Thread(target=self._accept_loop, name="boot-server-accept", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._wake_w.send(b"x")
            self._thread.join(5)
            self._thread = None
        if self._pool is not None:  # handlers end by their own deadline
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    # -- connections: the acceptor holds idle ones, the pool serves those that speak ----------

    def _accept_loop(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        waiting: dict[socket.socket, tuple[Any, float]] = {}  # conn -> (peer, deadline)
        try:
            while not self._stopping.is_set():
                now = time.monotonic()
                first = min((d for _, d in waiting.values()), default=now + 0.5)
                for key, _ in sel.select(max(0.0, min(first - now, 0.5))):
                    if key.data == "listen":
                        self._accept(sel, waiting)
                    elif key.data == "wake":
                        self._wake_r.recv(64)
                    else:  # it sent something: a worker reads the request
                        conn = key.fileobj
                        assert isinstance(conn, socket.socket)
                        sel.unregister(conn)
                        peer, deadline = waiting.pop(conn)
                        with self._cond:
                            self._busy += 1
                        assert self._pool is not None
                        self._pool.submit(self._serve, conn, peer, deadline)
                now = time.monotonic()
                for conn, (_, deadline) in list(waiting.items()):
                    if deadline <= now:
                        sel.unregister(conn)
                        del waiting[conn]
                        self.counts["idle_closed"] += 1
                        _close(conn)
        finally:
            for conn in waiting:
                _close(conn)
            sel.close()

    def _accept(self, sel: selectors.BaseSelector, waiting: dict[socket.socket, tuple[Any, float]]) -> None:
        for _ in range(64):  # a burst at a time; the loop comes back for more
            try:
                conn, peer = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # out of descriptors, or the peer gave up: try again later
                return
            with self._cond:
                busy = self._busy
            if len(waiting) + busy >= self.max_connections:
                self.counts["refused"] += 1
                _close(conn)
                continue
            conn.setblocking(False)
            waiting[conn] = (peer, time.monotonic() + self.request_timeout)
            sel.register(conn, selectors.EVENT_READ, "conn")

    def _serve(self, conn: socket.socket, peer: Any, deadline: float) -> None:
        try:
            conn.setblocking(True)
            self._handler(conn, peer, deadline)
            self.counts["served"] += 1
        except OSError:
            pass  # the client went away mid-reply
        finally:
            _close(conn)
            with self._cond:
                self._busy -= 1

    # -- the backend's side -----------------------------------------------------------------

    def set_node(self, node: NodeBoot) -> None:
        with self._cond:
            self._nodes[node.mac] = node

    def set_mode(self, mac: str, mode: str) -> None:
        with self._cond:
            if mac in self._nodes:
                self._nodes[mac] = replace(self._nodes[mac], mode=mode)

    def end_attempt(self, mac: str) -> None:
        """The node's attempt is over: its token is void, whatever still calls with it."""
        with self._cond:
            if mac in self._nodes:
                self._nodes[mac] = replace(self._nodes[mac], token="")

    def node(self, mac: str) -> NodeBoot | None:
        with self._cond:
            return self._nodes.get(mac)

    def seen(self, mac: str) -> NodeSeen:
        with self._cond:
            seen = self._seen.get(mac, NodeSeen())
            return NodeSeen(
                list(seen.ipxe),
                list(seen.reports),
                list(seen.progress),
                seen.installed_at,
                [dict(r) for r in seen.rejected],
            )

    def strays(self) -> list[dict[str, Any]]:
        """Refused calls that named no node being provisioned (the latest few)."""
        with self._cond:
            return [dict(r) for r in self._strays]

    def wait_report(
        self, mac: str, since: float, timeout: float, cancel: threading.Event | None = None
    ) -> tuple[float, dict[str, Any]] | None:
        """The first report from ``mac`` received at or after ``since``, waiting up to ``timeout``."""
        deadline = self._clock() + timeout
        with self._cond:
            while True:
                for t, report in self._seen.get(mac, NodeSeen()).reports:
                    if t >= since:
                        return t, report
                left = deadline - self._clock()
                if left <= 0 or (cancel is not None and cancel.is_set()):
                    return None
                self._cond.wait(min(left, 0.5))

    # -- the nodes' side (called from request threads) --------------------------------------

    def _record(self, mac: str, what: str, value: Any) -> None:
        with self._cond:
            seen = self._seen.setdefault(mac, NodeSeen())
            now = self._clock()
            if what == "ipxe":
                seen.ipxe.append((now, value))
            elif what == "report":
                seen.reports.append((now, value))
            elif what == "progress":
                seen.progress.append((now, value))
            elif what == "installed":
                seen.installed_at = now
                if mac in self._nodes:
                    self._nodes[mac] = replace(self._nodes[mac], mode="local")
            self._cond.notify_all()
        if what == "progress" and self.on_progress is not None:
            self.on_progress(mac, value)

    def _reject(self, mac: str | None, what: str, peer: str, reason: str) -> None:
        """Record a refused call: on its node when one is being provisioned, else as a stray."""
        with self._cond:
            attempt = {"at": self._clock(), "what": what, "peer": peer, "mac": mac, "reason": reason}
            if mac is not None and mac in self._nodes:
                rejected = self._seen.setdefault(mac, NodeSeen()).rejected
                rejected.append(attempt)
                del rejected[:-MAX_REJECTED]
                known = True
            else:
                self._strays.append(attempt)
                known = False
        if known and mac is not None and self.on_progress is not None:
            self.on_progress(mac, f"rejected {what} from {peer}: {reason}")

    def refusal(
        self, mac: str | None, peer: str, token: str | None = None, *, need_token: bool = True
    ) -> str | None:
        """Why ``peer`` may not speak for ``mac`` with ``token`` (None: it may)."""
        node = self.node(mac) if mac else None
        if node is None:
            return f"no node is being provisioned with MAC {mac}"
        if node.address is not None and peer != node.address:
            return f"it came from {peer}, not from {node.address}, the address reserved for {mac}"
        if not need_token:
            return None
        with self._cond:
            others = [(n.hostname, n.token) for m, n in self._nodes.items() if m != mac]
        return tokens.refusal(token, node.token, others)

    def script_for(self, mac: str) -> str:
        node = self.node(mac)
        if node is None:
            return scripts.unknown_script(mac)
        if node.mode == "local" or not node.script:
            return scripts.local_script()
        return node.script


def _listen(address: str, port: int) -> socket.socket:
    """A listening socket (not create_server: its OSError rewords strerror, which callers show)."""
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)
    conn.close()


def _peer(address: Any) -> str:
    """The caller's address as the reservation writes it (an IPv4-mapped IPv6 one as IPv4)."""
    try:
        ip = ipaddress.ip_address(address[0])
    except ValueError:
        return str(address[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return str(mapped or ip)


class _DeadlineReader(io.RawIOBase):
    """A socket's reading side that ends at one deadline, however the bytes trickle in."""

    def __init__(self, sock: socket.socket, deadline: float, timeout: float):
        self._sock, self._deadline, self._timeout = sock, deadline, timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the request did not arrive within {self._timeout:g} s")
        self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buf)
        except TimeoutError:
            raise TimeoutError(f"the request did not arrive within {self._timeout:g} s") from None


class _Writer(io.BufferedIOBase):
    def __init__(self, sock: socket.socket):
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.sendall(data)
        return len(data)


def _handler(server: BootServer) -> Callable[[socket.socket, Any, float], Any]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "bringup-boot/1"
        protocol_version = "HTTP/1.1"

        def __init__(self, request: socket.socket, client_address: Any, deadline: float):
            self.deadline = deadline
            super().__init__(request, client_address, server)  # type: ignore[arg-type]

        def setup(self) -> None:
            self.connection = self.request
            self.rfile = io.BufferedReader(
                _DeadlineReader(self.connection, self.deadline, server.request_timeout)
            )
            self.wfile = _Writer(self.connection)
            self.peer = _peer(self.client_address)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # progress is reported through the backend, not stderr

        def _send(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
            self.connection.settimeout(server.request_timeout)  # a reply the client stops reading
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _refuse(self, status: int, mac: str | None, what: str, reason: str) -> None:
            server._reject(mac, what, self.peer, reason)
            self._send(status, f"refused: {reason}\n".encode())

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/")]
            if parts == ["boot.ipxe"]:
                return self._send(200, scripts.chain_script(server.base_url).encode())
            if parts == ["node.ipxe"]:
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                mac = scripts.safe_mac(query.get("mac", ""))
                if mac is None:
                    return self._send(400, b"#!ipxe\necho bringup: no MAC in the request\nexit\n")
                server._record(mac, "ipxe", {**query, "client": self.peer})
                node = server.node(mac)
                # The script carries the attempt's token: only the reserved address gets it.
                if node is not None and (why := server.refusal(mac, self.peer, need_token=False)):
                    server._reject(mac, "ipxe-script", self.peer, why)
                    return self._send(403, scripts.unknown_script(mac).encode())
                script = server.script_for(mac)
                server._record(
                    mac, "progress", f"iPXE asked for its script: {node.mode if node else 'unknown'}"
                )
                return self._send(200, script.encode())
            if len(parts) == 2 and parts[0] == "files":
                return self._file(parts[1])
            if len(parts) in (3, 4) and parts[0] == "cloud-init":  # /cloud-init/<mac>[/<token>]/<file>
                mac = scripts.safe_mac(parts[1])
                node = server.node(mac) if mac else None
                if node is None or parts[-1] not in ("user-data", "meta-data", "vendor-data"):
                    return self._send(404, b"not found\n")
                token = parts[2] if len(parts) == 4 else None
                if why := server.refusal(mac, self.peer, token):
                    return self._refuse(403, mac, parts[-1], why)
                body = {"user-data": node.user_data, "meta-data": node.meta_data, "vendor-data": ""}[
                    parts[-1]
                ]
                if mac:
                    server._record(mac, "progress", f"installer fetched {parts[-1]}")
                return self._send(200, body.encode())
            return self._send(404, b"not found\n")

        def _file(self, name: str) -> None:
            base = server.files_dir
            if base is None or "/" in name or name.startswith("."):
                return self._send(404, b"not found\n")
            path = base / name
            if not path.is_file():
                return self._send(404, b"not found\n")
            size = path.stat().st_size
            self.connection.settimeout(server.request_timeout)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command == "HEAD":
                return
            with path.open("rb") as f:
                shutil.copyfileobj(f, self.wfile, 1 << 16)

        def _body(self, mac: str, what: str) -> bytes | None:
            """The whole body, or None after refusing the call (cut short, late, unsized)."""
            if self.headers.get("Transfer-Encoding"):
                self._refuse(411, mac, what, "a chunked body is not accepted; send a Content-Length")
                return None
            header = self.headers.get("Content-Length")
            if header is None and what != "installed":  # curl -X POST sends none; its body is unused
                self._refuse(411, mac, what, "no Content-Length")
                return None
            try:
                length = int(header or 0)
                if length < 0:
                    raise ValueError(header)
            except ValueError:
                self._refuse(400, mac, what, f"Content-Length {header!r} is not a size")
                return None
            if length > MAX_BODY:
                self._refuse(413, mac, what, f"a body of {length} bytes is over {MAX_BODY}")
                return None
            try:
                body = self.rfile.read(length) if length else b""
            except TimeoutError:
                self._refuse(408, mac, what, f"the body did not arrive within {server.request_timeout:g} s")
                return None
            if len(body) < length:
                self._refuse(
                    400, mac, what, f"the body ended after {len(body)} of its Content-Length {length} bytes"
                )
                return None
            return body

        def do_POST(self) -> None:  # noqa: N802
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/")]
            mac = scripts.safe_mac(parts[1]) if len(parts) == 2 else None
            if mac is None or parts[0] not in ("phone-home", "progress", "installed"):
                return self._send(404, b"not found\n")
            what = parts[0]
            token = self.headers.get(tokens.HEADER) or parse_qs(url.query).get("token", [None])[0]
            if why := server.refusal(mac, self.peer, token):
                return self._refuse(403, mac, what, why)
            body = self._body(mac, what)
            if body is None:
                return None
            ctype = self.headers.get("Content-Type", "")
            node = server.node(mac)
            if what == "phone-home":
                try:
                    report = reports.parse_report(body, ctype)
                except ValueError as exc:
                    return self._refuse(400, mac, what, f"bad report: {exc}")
                if node is not None and (why := reports.report_refusal(report, mac, self.peer, node.address)):
                    return self._refuse(403, mac, what, why)
                report["client"] = self.peer
                server._record(mac, "report", report)
                server._record(mac, "progress", "phone-home report received")
            elif what == "progress":
                server._record(mac, "progress", reports.progress_line(body, ctype))
            else:
                server._record(mac, "installed", True)
                server._record(mac, "progress", "installer finished; local boot from now on")
            return self._send(200, b"ok\n")

    return Handler

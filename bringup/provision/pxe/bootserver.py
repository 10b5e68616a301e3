"""The boot HTTP server: iPXE scripts per node state, installer configuration, phone-home.

    GET  /boot.ipxe                       the DHCP boot file for iPXE: chains to /node.ipxe with
                                          the firmware's own view (MAC, SMBIOS UUID and serial)
    GET  /node.ipxe?mac=...               the script for this node's state (agent/install/local)
    GET  /files/<name>                    the agent kernel and initrd
    GET  /cloud-init/<mac>/user-data      autoinstall + cloud-init for this node (meta-data,
                                          vendor-data likewise)
    POST /phone-home/<mac>                the node's own report (JSON: MACs, serial, UUID, disks)
    POST /progress/<mac>                  a progress line (text) or an installer event (JSON)
    POST /installed/<mac>                 the installer finished: boot this node locally from now on

It knows nothing about the fleet store or Redfish: the PXE backend tells it, per MAC, what to
serve, and reads back what the nodes said.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from bringup.provision.pxe import scripts

MAX_BODY = 1 << 20  # a report is a few KB; refuse anything silly


@dataclass(frozen=True)
class NodeBoot:
    """What the boot server serves one node."""

    key: str
    hostname: str
    mac: str
    mode: str  # agent | install | local
    script: str  # iPXE script for ``mode`` (agent/install); ``local`` needs none
    user_data: str = ""
    meta_data: str = ""


@dataclass
class NodeSeen:
    """What the boot server heard from one node (times are the server's monotonic clock)."""

    ipxe: list[tuple[float, dict[str, str]]] = field(default_factory=list)
    reports: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    progress: list[tuple[float, str]] = field(default_factory=list)
    installed_at: float | None = None


ProgressHook = Callable[[str, str], None]  # (mac, line)


class BootServer:
    def __init__(
        self,
        address: str,
        port: int,
        files_dir: Path | None = None,
        on_progress: ProgressHook | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        """Binds at once: an address or port that cannot be had raises OSError here."""
        self.files_dir = files_dir
        self.on_progress = on_progress
        self._clock = clock
        self._nodes: dict[str, NodeBoot] = {}
        self._seen: dict[str, NodeSeen] = {}
        self._cond = threading.Condition()
        self._httpd = _Server((address, port), _handler(self))
        self.address, self.port = self._httpd.server_address[:2]
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.address}]" if ":" in str(self.address) else self.address
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="boot-server", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(5)
            self._thread = None
        self._httpd.server_close()

    # -- the backend's side -----------------------------------------------------------------

    def set_node(self, node: NodeBoot) -> None:
        with self._cond:
            self._nodes[node.mac] = node

    def set_mode(self, mac: str, mode: str) -> None:
        with self._cond:
            if mac in self._nodes:
                self._nodes[mac] = replace(self._nodes[mac], mode=mode)

    def node(self, mac: str) -> NodeBoot | None:
        with self._cond:
            return self._nodes.get(mac)

    def seen(self, mac: str) -> NodeSeen:
        with self._cond:
            seen = self._seen.get(mac, NodeSeen())
            return NodeSeen(list(seen.ipxe), list(seen.reports), list(seen.progress), seen.installed_at)

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

    def script_for(self, mac: str) -> str:
        node = self.node(mac)
        if node is None:
            return scripts.unknown_script(mac)
        if node.mode == "local" or not node.script:
            return scripts.local_script()
        return node.script


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def _progress_line(body: bytes, ctype: str) -> str:
    """A progress POST -> one line: plain text, or a subiquity/curtin webhook event."""
    if "json" in ctype:
        try:
            event = json.loads(body)
        except ValueError:
            event = None
        if isinstance(event, dict):
            parts = [
                event.get("event_type"),
                event.get("name"),
                event.get("result"),
                event.get("description"),
            ]
            return " ".join(str(p) for p in parts if p)[:300]
    return body.decode(errors="replace").strip().splitlines()[0][:300] if body.strip() else "(empty)"


def _parse_report(body: bytes, ctype: str) -> dict[str, Any]:
    if "json" in ctype or body.lstrip().startswith(b"{"):
        doc = json.loads(body)
        if not isinstance(doc, dict):
            raise ValueError("a report must be a JSON object")
        return doc
    # cloud-init's phone_home module posts a form.
    return {k: v[0] if len(v) == 1 else v for k, v in parse_qs(body.decode(errors="replace")).items()}


def _handler(server: BootServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "bringup-boot/1"
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # progress is reported through the backend, not stderr

        def _send(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

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
                server._record(mac, "ipxe", {**query, "client": self.client_address[0]})
                script = server.script_for(mac)
                node = server.node(mac)
                server._record(
                    mac, "progress", f"iPXE asked for its script: {node.mode if node else 'unknown'}"
                )
                return self._send(200, script.encode())
            if len(parts) == 2 and parts[0] == "files":
                return self._file(parts[1])
            if len(parts) == 3 and parts[0] == "cloud-init":
                mac = scripts.safe_mac(parts[1])
                node = server.node(mac) if mac else None
                if node is None or parts[2] not in ("user-data", "meta-data", "vendor-data"):
                    return self._send(404, b"not found\n")
                body = {"user-data": node.user_data, "meta-data": node.meta_data, "vendor-data": ""}[parts[2]]
                if mac:
                    server._record(mac, "progress", f"installer fetched {parts[2]}")
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
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if self.command == "HEAD":
                return
            with path.open("rb") as f:
                shutil.copyfileobj(f, self.wfile, 1 << 16)

        def do_POST(self) -> None:  # noqa: N802
            parts = [unquote(p) for p in urlsplit(self.path).path.strip("/").split("/")]
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._send(413, b"too large\n")
            body = self.rfile.read(length) if length else b""
            ctype = self.headers.get("Content-Type", "")
            mac = scripts.safe_mac(parts[1]) if len(parts) == 2 else None
            if mac is None or parts[0] not in ("phone-home", "progress", "installed"):
                return self._send(404, b"not found\n")
            if parts[0] == "phone-home":
                try:
                    report = _parse_report(body, ctype)
                except ValueError as exc:
                    return self._send(400, f"bad report: {exc}\n".encode())
                report.setdefault("client", self.client_address[0])
                server._record(mac, "report", report)
                server._record(mac, "progress", "phone-home report received")
            elif parts[0] == "progress":
                server._record(mac, "progress", _progress_line(body, ctype))
            else:
                server._record(mac, "installed", True)
                server._record(mac, "progress", "installer finished; local boot from now on")
            return self._send(200, b"ok\n")

    return Handler

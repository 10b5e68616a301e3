"""A BMC that misbehaves on one path, for the client's bounds (docs/redfish.md, "Bounds").

A threading ``http.server`` on 127.0.0.1 serves a fixture's tree (tests/fixtures/redfish) as
plain GETs, basic auth taken on trust, no sessions and no ``$expand`` (the client then walks
the tree one GET at a time), and answers ``path`` with one of ``ABUSES``:

- ``gzip_bomb``: a JSON object of ``size`` bytes, gzip-compressed (1 GiB is about 1 MiB on the wire);
- ``big_body``: a JSON object of ``size`` bytes, streamed; ``big_stream``: the same without a
  Content-Length (the body ends when the connection does), so only what arrives can stop it;
- ``drip_body`` / ``drip_headers``: the answer one byte every ``interval`` seconds, after the
  headers or from the status line on;
- ``many_members``: a collection of ``size`` members (``@odata.id`` only), one page; each
  member answers its own GET;
- ``paged_members``: the same in pages of 1,000 linked by ``Members@odata.nextLink``;
- ``deep_json``: an object nested ``size`` levels deep;
- ``error_200``: HTTP 200 whose body is a Redfish error object.

Benchmarks serve it from a process of their own (benchmarks/discover_hostile.py).
"""

from __future__ import annotations

import copy
import json
import threading
import zlib
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.doubles.redfish_server import _norm, error_body, load_fixture

ABUSES = (
    "gzip_bomb",
    "big_body",
    "big_stream",
    "drip_body",
    "drip_headers",
    "many_members",
    "paged_members",
    "deep_json",
    "error_200",
)
PAGE = 1000
CHUNK = 1 << 16


@lru_cache(maxsize=4)
def gzip_bomb(size: int) -> bytes:
    """A JSON object of ``size`` bytes (``{"Pad": "000..."}``: valid, so only its size can stop
    it) as one gzip member, compressed a MiB at a time (never held whole)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head, tail = b'{"Pad": "', b'"}'
    zeros, parts, left = b"0" * (1 << 20), [packer.compress(head)], size - len(head) - len(tail)
    while left > 0:
        parts.append(packer.compress(zeros[: min(left, len(zeros))]))
        left -= len(zeros)
    parts.append(packer.compress(tail))
    parts.append(packer.flush())
    return b"".join(parts)


def plain_tree(fixture: str, serial_suffix: str = "") -> dict[str, Any]:
    """A fixture's resources as a plain BMC serves them: no sessions, no query support."""
    resources, _fake = load_fixture(fixture)
    tree = copy.deepcopy(resources)
    root = tree["/redfish/v1"]
    root.pop("ProtocolFeaturesSupported", None)
    root.get("Links", {}).pop("Sessions", None)
    if serial_suffix:
        for doc in tree.values():
            if isinstance(doc, dict) and isinstance(doc.get("SerialNumber"), str) and doc["SerialNumber"]:
                doc["SerialNumber"] += serial_suffix
    return tree


class HostileBmc:
    """Serve ``fixture``'s tree on a loopback port, with ``abuse`` at ``path``. A context manager."""

    def __init__(
        self,
        abuse: str,
        path: str,
        *,
        size: int = 0,
        interval: float = 1.0,
        fixture: str = "dell-idrac9",
        serial_suffix: str = "",
    ):
        if abuse not in ABUSES:
            raise ValueError(f"abuse {abuse!r} is not one of {ABUSES}")
        self.abuse, self.path, self.size, self.interval = abuse, _norm(path), size, interval
        self.tree = plain_tree(fixture, serial_suffix)
        self.stopped = threading.Event()
        self.hits = 0  # requests for the abused path
        self.requests = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HostileBmc:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        bmc = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                bmc.requests += 1
                path = _norm(self.path)
                if path == bmc.path or (bmc.abuse == "paged_members" and path.startswith(bmc.path + "/page")):
                    bmc.hits += 1
                    try:
                        getattr(bmc, f"_{bmc.abuse}")(self, path)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True
                    return
                doc = bmc.tree.get(path) or bmc._member(path)
                if doc is None:
                    self._json(404, error_body(f"{path} not found"))
                else:
                    self._json(200, doc)

            def do_POST(self) -> None:  # noqa: N802
                self._json(405, error_body("no actions here"))

            do_PATCH = do_DELETE = do_POST  # noqa: N815

            def _json(self, status: int, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    # -- the abuses: each answers one request ---------------------------------------------------

    def _gzip_bomb(self, h: BaseHTTPRequestHandler, _path: str) -> None:
        body = gzip_bomb(self.size)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _big_body(self, h: BaseHTTPRequestHandler, _path: str, announce: bool = True) -> None:
        head, tail = b'{"Pad": "', b'"}'
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if announce:
            h.send_header("Content-Length", str(self.size))
        else:
            h.send_header("Connection", "close")
            h.close_connection = True
        h.end_headers()
        h.wfile.write(head)
        left = self.size - len(head) - len(tail)
        pad = b"x" * CHUNK
        while left > 0 and not self.stopped.is_set():
            h.wfile.write(pad[: min(left, CHUNK)])
            left -= CHUNK
        h.wfile.write(tail)

    def _big_stream(self, h: BaseHTTPRequestHandler, path: str) -> None:
        self._big_body(h, path, announce=False)

    def _drip(self, h: BaseHTTPRequestHandler, data: bytes) -> None:
        for i in range(len(data)):
            if self.stopped.wait(self.interval):
                return
            h.wfile.write(data[i : i + 1])
            h.wfile.flush()

    def _drip_body(self, h: BaseHTTPRequestHandler, path: str) -> None:
        body = json.dumps(self.tree.get(path, {})).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.flush()
        self._drip(h, body)

    def _drip_headers(self, h: BaseHTTPRequestHandler, path: str) -> None:
        body = json.dumps(self.tree.get(path, {})).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        self._drip(h, head.encode() + body)

    def _collection(self, path: str, start: int, stop: int) -> dict[str, Any]:
        return {
            "@odata.id": path,
            "Members": [{"@odata.id": f"{self.path}/{i}"} for i in range(start, stop)],
            "Members@odata.count": self.size,
        }

    def _member(self, path: str) -> dict[str, Any] | None:
        """A member of the abused collection, answered as a real one would be (read on and on)."""
        parent, _, ident = path.rpartition("/")
        if self.abuse not in ("many_members", "paged_members") or parent != self.path or not ident.isdigit():
            return None
        n = int(ident)
        mac = ":".join(f"{b:02X}" for b in (0x02, 0, 0, (n >> 16) & 255, (n >> 8) & 255, n & 255))
        return {"@odata.id": path, "Id": ident, "MACAddress": mac, "LinkStatus": "LinkUp"}

    def _many_members(self, h: BaseHTTPRequestHandler, path: str) -> None:
        h._json(200, self._collection(path, 0, self.size))  # type: ignore[attr-defined]

    def _paged_members(self, h: BaseHTTPRequestHandler, path: str) -> None:
        page = int(path.rsplit("page", 1)[1]) if path != self.path else 0
        doc = self._collection(path, page * PAGE, min(self.size, (page + 1) * PAGE))
        if (page + 1) * PAGE < self.size:
            doc["Members@odata.nextLink"] = f"{self.path}/page{page + 1}"
        h._json(200, doc)  # type: ignore[attr-defined]

    def _deep_json(self, h: BaseHTTPRequestHandler, _path: str) -> None:
        body = b'{"a": ' * self.size + b"1" + b"}" * self.size
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _error_200(self, h: BaseHTTPRequestHandler, path: str) -> None:
        h._json(200, error_body(f"Unable to read {path}: the service is busy"))  # type: ignore[attr-defined]

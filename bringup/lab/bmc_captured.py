"""A lab BMC that serves a captured Redfish tree as it is: the shapes sushy-tools cannot make.

sushy-tools emulates one ComputerSystem per BMC with one manager and one chassis. Real GPU
servers' BMCs are not so: an HGX or GB300 BMC lists the GPU baseboard as a second system, an
AMI MegaRAC writes a placeholder chassis serial, an HPE Cray EX blade puts two or four nodes,
auxiliary managers and NIC mezzanine cards behind one BMC. A system of the lab's BMC config
with ``"tree": PATH`` is served from that file instead (``{path: document}``, the form of
tests/fixtures/redfish/<machine>/tree.json, each with the SOURCE.md of its public capture):
GET answers the document at the path (a trailing slash and the query ignored), anything else
404 or 405, behind HTTP basic auth with the config's ``user`` and ``password``. Read-only:
discovery's view of such a BMC, not power or boot.
"""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

StartResponse = Callable[..., Any]
Wsgi = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def load_tree(path: str | Path) -> dict[str, Any]:
    """``{path: document}`` with the paths as compared (no trailing slash); a captured error
    body (``{"error": ...}``: the BMC answered 404 to the crawler) is left out, so it is a 404
    here too."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {
        (key.rstrip("/") or "/"): doc
        for key, doc in raw.items()
        if not key.startswith("_") and not (isinstance(doc, dict) and set(doc) == {"error"})
    }


def _answer(start_response: StartResponse, status: str, doc: dict[str, Any]) -> Iterable[bytes]:
    body = json.dumps(doc).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _error(message: str, message_id: str) -> dict[str, Any]:
    return {"error": {"code": message_id, "message": message}}


def captured_app(tree: dict[str, Any], user: str, password: str) -> Wsgi:
    """The WSGI app serving ``tree`` (``load_tree``) to requests that carry the credentials."""
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = (environ.get("PATH_INFO") or "/").rstrip("/") or "/"
        if path != "/redfish/v1" and not hmac.compare_digest(environ.get("HTTP_AUTHORIZATION", ""), expected):
            start_response(
                "401 UNAUTHORIZED", [("WWW-Authenticate", 'Basic realm="lab"'), ("Content-Length", "0")]
            )
            return [b""]
        if environ.get("REQUEST_METHOD") != "GET":
            return _answer(
                start_response,
                "405 METHOD NOT ALLOWED",
                _error("a captured tree is read-only", "Base.1.0.ActionNotSupported"),
            )
        doc = tree.get(path)
        if doc is None:
            missing = _error(
                f"The resource at the URI {path} was not found.", "Base.1.0.ResourceMissingAtURI"
            )
            return _answer(start_response, "404 NOT FOUND", missing)
        return _answer(start_response, "200 OK", doc)

    return app

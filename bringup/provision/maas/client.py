"""The MAAS REST API 2.0 client: the API key, OAuth 1.0 PLAINTEXT signing, HTTP calls and errors."""

from __future__ import annotations

import base64
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import requests

from bringup.core.credentials import CredentialError
from bringup.core.errors import UserError

# -- API key and OAuth 1.0 PLAINTEXT signing ------------------------------------------------


@dataclass(frozen=True)
class ApiKey:
    """A MAAS API key, ``consumer_key:token_key:token_secret`` (the consumer secret is empty)."""

    consumer: str
    token: str
    secret: str = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> ApiKey:
        parts = text.strip().split(":")
        if len(parts) != 3 or not all(parts):
            # Never echo the text: it is the secret.
            raise CredentialError(
                "a MAAS API key has three parts, consumer:token:secret (maas apikey --username=USER)"
            )
        return cls(*parts)

    def __repr__(self) -> str:
        return "ApiKey(<redacted>)"


def oauth_header(key: ApiKey, *, nonce: str | None = None, timestamp: int | None = None) -> str:
    """The ``Authorization`` header MAAS expects: OAuth 1.0, PLAINTEXT, empty consumer secret."""
    fields = (
        ("oauth_version", "1.0"),
        ("oauth_signature_method", "PLAINTEXT"),
        ("oauth_consumer_key", key.consumer),
        ("oauth_token", key.token),
        ("oauth_signature", "&" + quote(key.secret, safe="")),  # consumer secret "" & token secret
        ("oauth_nonce", nonce or secrets.token_hex(16)),
        ("oauth_timestamp", str(int(time.time()) if timestamp is None else timestamp)),
    )
    return "OAuth " + ", ".join(f'{name}="{quote(value, safe="&%")}"' for name, value in fields)


def api_base(maas_url: str) -> str:
    """``http://maas:5240/MAAS`` -> ``http://maas:5240/MAAS/api/2.0/``."""
    base = maas_url.rstrip("/")
    if not base.endswith("/api/2.0"):
        base += "/api/2.0"
    return base + "/"


# -- the HTTP client ---------------------------------------------------------------------------


class MaasError(UserError, RuntimeError):
    """A MAAS call that did not succeed. ``status`` is the HTTP status, None if none came back."""

    def __init__(self, message: str, status: int | None = None, op: str | None = None):
        super().__init__(message)
        self.status = status
        self.op = op


def error_text(response: requests.Response) -> str:
    """MAAS's own words from an error answer: a text body, or a form's field errors."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        parts = []
        for name, errors in body.items():
            errs = errors if isinstance(errors, list) else [errors]
            parts.append(f"{name}: {' '.join(str(e) for e in errs)}")
        text = "; ".join(parts)
    else:
        text = response.text.strip()
    text = text or response.reason or "no message"
    return text[:500]


class MaasClient:
    """The few MAAS API 2.0 calls provisioning needs. Thread-safe: one HTTP session per thread."""

    def __init__(
        self,
        url: str,
        key: ApiKey,
        *,
        timeout: tuple[float, float] = (10.0, 60.0),
        verify: bool | str = True,
    ):
        self.base = api_base(url)
        self._key = key
        self.timeout = timeout
        self.verify = verify
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._lock = threading.Lock()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        op: str | None = None,
        query: Sequence[tuple[str, str]] = (),
        form: Sequence[tuple[str, str]] = (),
    ) -> Any:
        """One API call: ``op`` and filters in the query string, parameters form-encoded."""
        params = ([("op", op)] if op else []) + list(query)
        headers = {"Authorization": oauth_header(self._key), "Accept": "application/json"}
        try:
            response = self._session().request(
                method,
                self.base + path,
                params=params,
                data=list(form) if method != "GET" else None,
                headers=headers,
                timeout=self.timeout,
                verify=self.verify,
            )
        except requests.RequestException as exc:
            raise MaasError(f"cannot reach MAAS at {self.base}: {type(exc).__name__}: {exc}", op=op) from None
        if response.status_code >= 400:
            raise MaasError(error_text(response), response.status_code, op)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise MaasError(f"MAAS answered {path} with something that is not JSON", op=op) from None

    # Calls by name.
    def whoami(self) -> dict[str, Any]:
        return self.call("GET", "users/", op="whoami")

    def machines_by_mac(self, macs: Sequence[str]) -> list[dict[str, Any]]:
        return self.call("GET", "machines/", query=[("mac_address", m) for m in macs])

    def machine(self, system_id: str) -> dict[str, Any]:
        return self.call("GET", f"machines/{system_id}/")

    def create_machine(self, form: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return self.call("POST", "machines/", form=form)

    def update_machine(self, system_id: str, form: Sequence[tuple[str, str]]) -> dict[str, Any]:
        return self.call("PUT", f"machines/{system_id}/", form=form)

    def commission(self, system_id: str) -> dict[str, Any]:
        # skip_bmc_config: keep the Redfish account we gave MAAS; commissioning would
        # otherwise create its own BMC user and rewrite the machine's power parameters.
        return self.call("POST", f"machines/{system_id}/", op="commission", form=[("skip_bmc_config", "1")])

    def allocate(self, system_id: str) -> dict[str, Any]:
        return self.call("POST", "machines/", op="allocate", form=[("system_id", system_id)])

    def deploy(self, system_id: str, distro_series: str, user_data: str) -> dict[str, Any]:
        encoded = base64.b64encode(user_data.encode()).decode()
        form = [("distro_series", distro_series), ("user_data", encoded)]
        return self.call("POST", f"machines/{system_id}/", op="deploy", form=form)

    def release(self, system_id: str) -> dict[str, Any]:
        return self.call("POST", f"machines/{system_id}/", op="release")

    def ensure_tag(self, name: str) -> None:
        try:
            self.call("GET", f"tags/{name}/")
            return
        except MaasError as exc:
            if exc.status != 404:
                raise
        try:
            self.call("POST", "tags/", form=[("name", name), ("comment", "added by bringup")])
        except MaasError as exc:
            if exc.status != 400:  # 400: another client created it meanwhile
                raise
            self.call("GET", f"tags/{name}/")

    def tag_machine(self, name: str, system_id: str) -> None:
        self.call("POST", f"tags/{name}/", op="update_nodes", form=[("add", system_id)])

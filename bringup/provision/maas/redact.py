"""Keep secrets (the API key, BMC passwords) out of every log line, message and outcome."""

from __future__ import annotations

import threading


class Redactor:
    """Replaces every known secret in a text; shared by every thread of a run."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        with self._lock:
            self._secrets.update(v for v in values if v and len(v) >= 4)

    def __call__(self, text: str) -> str:
        with self._lock:
            found = sorted(self._secrets, key=len, reverse=True)
        for secret in found:
            text = text.replace(secret, "<redacted>")
        return text

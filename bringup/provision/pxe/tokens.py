"""Per-node, per-attempt boot tokens (pure).

Each provisioning attempt of a node gets a fresh random token. The boot server hands it only to
that node (in the iPXE script the node's reserved address fetches: on the agent's kernel command
line, in the installer's seed URL and user-data), and every call that speaks for the node
(phone-home, progress, installed, the cloud-init seed) must carry it back. A token dies when its
attempt ends. The value itself is never recorded: refusals say what was wrong.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable

HEADER = "X-Bringup-Token"  # how the agent sends it; URLs the installer posts to carry ?token=
NBYTES = 24  # 192 bits, 32 URL-safe characters


def new_token() -> str:
    """A fresh token: URL-safe (it goes into URLs and the kernel command line unquoted)."""
    return secrets.token_urlsafe(NBYTES)


def refusal(presented: str | None, expected: str, others: Iterable[tuple[str, str]] = ()) -> str | None:
    """Why ``presented`` does not authenticate a call for a node whose attempt holds ``expected``
    ('' once the attempt ended); None: it does. ``others`` are (node name, token) of the other
    nodes being provisioned, to say "another node's token" rather than just "wrong"."""
    if not expected:
        return "its boot attempt has ended (the token it was given is void; provision it again)"
    if not presented:
        return "no boot token"
    if hmac.compare_digest(presented.encode(), expected.encode()):
        return None
    for name, token in others:
        if token and hmac.compare_digest(presented.encode(), token.encode()):
            return f"it carries the boot token of another node ({name})"
    return "a wrong boot token"

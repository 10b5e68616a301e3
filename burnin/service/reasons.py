"""Slurm drain reasons: the ones this project writes, and whose a reason is (pure).

A health check drains with ``bringup: <check>: <finding>``; the nightly re-test drains with
``bringup nightly run N``. Any other reason is an operator's (or another tool's, such as NHC's),
and the project never resumes nor rewrites such a drain (NHC's rule).
"""

from __future__ import annotations

from enum import Enum

HEALTH_PREFIX = "bringup: "  # a drain by `burnin health`
PROJECT_PREFIX = "bringup "  # any other drain by this project ("bringup nightly run 12")
# slurmctld keeps a longer reason (a 1,224-character one was stored and printed whole, Slurm
# 22.05.8 in the lab), but slurmdbd's event table keeps a node's reason in a TINYTEXT column:
# 255 bytes. A longer reason is cut at a word, with an ellipsis, to fit.
REASON_MAX_BYTES = 255
_ELLIPSIS = "..."


class DrainOrigin(str, Enum):
    HEALTH = "health"  # `burnin health` drained it
    PROJECT = "project"  # another step of this project (the nightly) drained it
    OPERATOR = "operator"  # anyone else: never touched

    def __str__(self) -> str:
        return self.value


def drain_origin(reason: str) -> DrainOrigin:
    if reason.startswith(HEALTH_PREFIX):
        return DrainOrigin.HEALTH
    if reason.startswith(PROJECT_PREFIX):
        return DrainOrigin.PROJECT
    return DrainOrigin.OPERATOR


def fit_reason(text: str, limit: int = REASON_MAX_BYTES) -> str:
    """One line of at most ``limit`` UTF-8 bytes: cut at the last space that fits (or inside
    the last word when there is none), never inside a character, ending with '...'."""
    text = " ".join(text.split())  # one line: Slurm prints reasons on one line
    if len(text.encode()) <= limit:
        return text
    room = limit - len(_ELLIPSIS)
    cut = text.encode()[:room].decode(errors="ignore")
    space = cut.rfind(" ")
    if space > room // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + _ELLIPSIS


def health_reason(check: str, finding: str) -> str:
    """The reason `burnin health` drains with: ``bringup: <check>: <finding>``, cut to fit."""
    return fit_reason(f"{HEALTH_PREFIX}{check}: {finding}")


def health_finding(reason: str) -> str:
    """``<check>: <finding>`` from a health drain reason (the reason itself otherwise)."""
    return reason[len(HEALTH_PREFIX) :] if reason.startswith(HEALTH_PREFIX) else reason

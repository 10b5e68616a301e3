"""What `burnin health` keeps on the node: its last result as JSON, the kernel-log cursor, and
the verdicts as Prometheus metrics for node_exporter's textfile collector.

Rendering is pure (``render_metrics``); the writes are atomic (a temporary file renamed into
place), so `burnin sync`, node_exporter or a person reading meanwhile never sees half a file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from burnin.result import Verdict

DEFAULT_STATE_DIR = Path("/var/lib/bringup/health")
# Debian/Ubuntu's prometheus-node-exporter reads *.prom here (--collector.textfile.directory).
DEFAULT_TEXTFILE_DIR = Path("/var/lib/prometheus/node-exporter")
LAST_RESULT = "last.json"
CURSOR_FILE = "cursor.json"
METRICS_FILE = "bringup_health.prom"
STREAK_FILE = "unknown_streak.json"  # check -> runs in a row it was UNKNOWN


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_cursor(state_dir: Path) -> dict[str, Any] | None:
    """The kernel-log cursor the last run left, as JSON (burnin.service.health reads it, and
    says when it cannot use it); None when there is none or it is unreadable: then every line
    of the log is judged again, never fewer."""
    try:
        data = json.loads((state_dir / CURSOR_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_cursor(state_dir: Path, cursor: Mapping[str, Any] | None) -> None:
    if cursor:
        write_atomic(state_dir / CURSOR_FILE, json.dumps(cursor, sort_keys=True) + "\n")


def read_streaks(state_dir: Path) -> dict[str, int]:
    """Check -> runs in a row it was UNKNOWN, as the last run left it; {} when none or unreadable
    (a streak then starts over: one more run before a drain, never a drain too soon)."""
    try:
        data = json.loads((state_dir / STREAK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}


def write_streaks(state_dir: Path, streaks: Mapping[str, int]) -> None:
    write_atomic(state_dir / STREAK_FILE, json.dumps(dict(streaks), sort_keys=True) + "\n")


def write_last(state_dir: Path, report: Mapping[str, Any]) -> Path:
    path = state_dir / LAST_RESULT
    write_atomic(path, json.dumps(report, indent=2, sort_keys=True, default=str) + "\n")
    return path


def read_last(state_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((state_dir / LAST_RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- Prometheus textfile ---------------------------------------------------------------------------


def _label(value: str) -> str:
    """A label value as the exposition format wants it: backslash, quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_metrics(report: Mapping[str, Any]) -> str:
    """The health report as Prometheus text exposition (node_exporter textfile collector).

    ``bringup_health_check_verdict{check,verdict}`` is 1 for the verdict each check had and 0 for
    the others, so an alert is ``bringup_health_check_verdict{verdict="FAIL"} == 1``.
    """
    node = _label(str(report.get("node", "")))
    out = [
        "# HELP bringup_health_check_verdict Verdict of each burnin health check at its last run (1 = this verdict).",
        "# TYPE bringup_health_check_verdict gauge",
    ]
    checks = report.get("checks", [])
    for check in checks:
        name = _label(str(check.get("check", "")))
        for verdict in Verdict:
            value = 1 if check.get("verdict") == verdict.value else 0
            out.append(
                f'bringup_health_check_verdict{{node="{node}",check="{name}",verdict="{verdict.value}"}} {value}'
            )
    out += [
        "# HELP bringup_health_check_seconds Wall time of each check's command at the last run.",
        "# TYPE bringup_health_check_seconds gauge",
    ]
    for check in checks:
        name = _label(str(check.get("check", "")))
        out.append(
            f'bringup_health_check_seconds{{node="{node}",check="{name}"}} {float(check.get("wall_s", 0)):.3f}'
        )
    streaks = report.get("unknown_streak") or {}
    if streaks:
        out += [
            "# HELP bringup_health_unknown_streak Runs in a row each check was UNKNOWN (health.unknown_streak drains).",
            "# TYPE bringup_health_unknown_streak gauge",
        ]
        out += [
            f'bringup_health_unknown_streak{{node="{node}",check="{_label(str(name))}"}} {int(n)}'
            for name, n in streaks.items()
        ]
    verdict = str(report.get("verdict", Verdict.UNKNOWN.value))
    out += [
        "# HELP bringup_health_verdict The node's verdict at the last run (1 = this verdict).",
        "# TYPE bringup_health_verdict gauge",
        *(
            f'bringup_health_verdict{{node="{node}",verdict="{v.value}"}} {1 if v.value == verdict else 0}'
            for v in Verdict
        ),
        "# HELP bringup_health_drain 1 when the last run asked Slurm to drain the node (or found it drained for it).",
        "# TYPE bringup_health_drain gauge",
        f'bringup_health_drain{{node="{node}"}} {1 if report.get("drain") else 0}',
        "# HELP bringup_health_duration_seconds Wall time of the last run.",
        "# TYPE bringup_health_duration_seconds gauge",
        f'bringup_health_duration_seconds{{node="{node}"}} {float(report.get("wall_s", 0)):.3f}',
        "# HELP bringup_health_last_run_timestamp_seconds When the last run finished (Unix time).",
        "# TYPE bringup_health_last_run_timestamp_seconds gauge",
        f'bringup_health_last_run_timestamp_seconds{{node="{node}"}} {float(report.get("finished_at_unix", 0)):.3f}',
        "# HELP bringup_health_breaker_held 1 when the fleet-wide circuit breaker held this node's drain "
        "(its check is suspect: docs/in-service.md).",
        "# TYPE bringup_health_breaker_held gauge",
        f'bringup_health_breaker_held{{node="{node}",check="{_label(str(report.get("failed_check", "")))}"}} '
        f"{1 if report.get('breaker_held') else 0}",
    ]
    return "\n".join(out) + "\n"


def write_metrics(textfile_dir: Path, report: Mapping[str, Any]) -> Path:
    path = textfile_dir / METRICS_FILE
    write_atomic(path, render_metrics(report))
    return path

"""ansible-runner events folded into one outcome per host (pure: no I/O, no Ansible imports).

Events arrive as ansible-runner delivers them (``event_handler``): ``runner_on_ok``,
``runner_on_failed``, ``runner_on_unreachable``, ... each with ``event_data`` naming the host,
the task and its role, and the module's result (``res``). A host ends:

- ``ok``: it reached the play's last task (the version report), every role applied;
- ``failed``: a task failed (not ignored); we keep the role, the task and Ansible's message,
  with the package manager's error lines (dpkg's) picked out of the output;
- ``unreachable``: Ansible could not reach it over SSH;
- ``not-run``: no event ever named it (the play stopped before its batch, e.g. because every
  host of an earlier batch failed);
- ``timed-out``: the run's overall time limit stopped the play before this host finished
  (whatever it had done so far, it is not known to be configured).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REPORT_TASK = "Report installed versions"  # the last task of playbooks/site.yml
PLAY_LEVEL = "site"  # the "role" of tasks that belong to no role (the play's own tasks)
TAIL_LINES = 20
_ERROR_LINE = re.compile(r"^(dpkg|E:|W: |Error!|Errors were encountered|Consult )|error", re.IGNORECASE)


@dataclass
class HostOutcome:
    name: str
    status: str = "pending"  # pending -> ok | failed | unreachable; not-run | timed-out at the end
    ok: int = 0
    changed: int = 0
    skipped: int = 0
    changed_by_role: dict[str, int] = field(default_factory=dict)
    changed_tasks: list[str] = field(default_factory=list)  # "role: task", in order
    role: str | None = None  # where it failed (or became unreachable)
    task: str | None = None
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    packages: dict[str, str] = field(default_factory=dict)  # from the version report
    reboot_required: bool = False
    last_task: str = ""  # "role: task" of the latest event (progress display)

    @property
    def done(self) -> bool:
        return self.status != "pending"

    @property
    def changed_roles(self) -> list[str]:
        return sorted(self.changed_by_role)


def parse_report(stdout: str) -> tuple[dict[str, str], bool]:
    """The version report's output -> ({package: version} of installed ones, reboot required)."""
    packages: dict[str, str] = {}
    reboot = False
    for line in stdout.splitlines():
        if line.strip() == "reboot-required":
            reboot = True
            continue
        parts = line.split("\t")
        # Status abbreviation: wanted (i install, h hold), current (i installed), error flag.
        # Anything not fully installed (half-configured after a failed postinst...) is left out.
        status = parts[2] if len(parts) == 3 else ""
        if len(status) >= 2 and status[0] in "ih" and status[1] == "i" and status[2:].strip() == "":
            packages[parts[0]] = parts[1]
    return packages, reboot


def error_lines(*texts: str, limit: int = 12) -> list[str]:
    """The lines of tool output that say what went wrong (dpkg's, apt's, DKMS's), in order."""
    out: list[str] = []
    for text in texts:
        lines = (text or "").splitlines()
        for i, line in enumerate(lines):
            if _ERROR_LINE.search(line) and line.strip() not in out:
                out.append(line.strip())
                # dpkg continues its error on an indented line ("installed X package post-...").
                if i + 1 < len(lines) and lines[i + 1].startswith(" ") and lines[i + 1].strip():
                    out.append(lines[i + 1].strip())
    return out[:limit]


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join((text or "").splitlines()[-lines:])


def _failed_result(res: Mapping[str, Any]) -> Mapping[str, Any]:
    """A loop task's result holds one result per item: the first failed item says why."""
    for item in res.get("results") or []:
        if isinstance(item, Mapping) and item.get("failed"):
            return item
    return res


def failure_summary(res: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(message, details) of a failed task's result."""
    res = _failed_result(res)
    msg = str(res.get("msg") or "")
    stdout, stderr = str(res.get("stdout") or ""), str(res.get("stderr") or "")
    details: dict[str, Any] = {"msg": msg}
    if stdout:
        details["stdout_tail"] = _tail(stdout)
    if stderr:
        details["stderr_tail"] = _tail(stderr)
    if "rc" in res:
        details["rc"] = res["rc"]
    errors = error_lines(stderr, stdout)
    if errors:
        details["errors"] = errors
    message = _first_line(msg) or _first_line(stderr) or "task failed"
    # apt's message is the whole apt-get command line, then "E: Sub-process /usr/bin/dpkg returned
    # an error code (1)"; what the package itself said is in dpkg's lines (which package, which
    # maintainer script) and in the script's own error line just before them.
    dpkg = [i for i, line in enumerate(errors) if line.startswith("dpkg: error")]
    if dpkg:
        first = dpkg[0]
        said = [line for line in errors[:first] if not line.startswith(("E:", "W:"))]
        message = " ".join(errors[first : first + 2]) + (f" ({said[0]})" if said else "")
    elif len(message) > 300:
        message = message[:297] + "..."
    return message, details


class EventFolder:
    """Feed it every event of a run; ``outcomes`` holds the per-host result so far."""

    def __init__(self, hosts: Iterable[str]):
        self.outcomes: dict[str, HostOutcome] = {h: HostOutcome(h) for h in hosts}
        self.stats: dict[str, Any] = {}

    def _host(self, data: Mapping[str, Any]) -> HostOutcome | None:
        host = data.get("host")
        if not host:
            return None
        if host not in self.outcomes:  # a host the inventory did not name (delegation): track it anyway
            self.outcomes[host] = HostOutcome(host)
        return self.outcomes[host]

    def feed(self, event: Mapping[str, Any]) -> HostOutcome | None:
        """Fold one event in; returns the host outcome it touched, if any."""
        kind = event.get("event", "")
        data: Mapping[str, Any] = event.get("event_data") or {}
        if kind == "playbook_on_stats":
            self.stats = {k: data.get(k) or {} for k in ("ok", "changed", "failures", "dark", "skipped")}
            return None
        if not kind.startswith("runner_on_"):
            return None
        outcome = self._host(data)
        if outcome is None:
            return None
        role = str(data.get("role") or PLAY_LEVEL)
        task = str(data.get("task") or "")
        outcome.last_task = f"{role}: {task}"
        if kind == "runner_on_start":
            return None  # the task it is in now (what a time limit cut short), nothing to count
        res: Mapping[str, Any] = data.get("res") or {}
        if kind == "runner_on_ok":
            outcome.ok += 1
            if res.get("changed"):
                outcome.changed += 1
                outcome.changed_by_role[role] = outcome.changed_by_role.get(role, 0) + 1
                outcome.changed_tasks.append(f"{role}: {task}")
            if task == REPORT_TASK and role == PLAY_LEVEL:
                outcome.packages, outcome.reboot_required = parse_report(str(res.get("stdout") or ""))
                if outcome.status == "pending":
                    outcome.status = "ok"
        elif kind == "runner_on_skipped":
            outcome.skipped += 1
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            if outcome.status in ("pending", "ok"):
                outcome.status = "failed"
                outcome.role, outcome.task = role, task
                outcome.message, outcome.details = failure_summary(res)
                outcome.details.update(role=role, task=task, action=data.get("task_action"))
        elif kind == "runner_on_unreachable" and outcome.status in ("pending", "ok"):
            outcome.status = "unreachable"
            outcome.role, outcome.task = role, task
            outcome.message = _first_line(str(res.get("msg") or "")) or "unreachable"
            outcome.details = {"msg": str(res.get("msg") or ""), "role": role, "task": task}
        return outcome

    def finish(self, stopped: str | None = None) -> dict[str, HostOutcome]:
        """Close the run: hosts never reached by the play are ``not-run``; the stats event
        (Ansible's own per-host counts) settles any host the task events left pending.

        ``stopped`` says why the play was cut short (the overall time limit): then a host still
        pending is ``timed-out`` whatever tasks it had passed, since the play never finished it.
        """
        failures, dark = self.stats.get("failures", {}), self.stats.get("dark", {})
        for name, outcome in self.outcomes.items():
            if outcome.status != "pending":
                continue
            if stopped:
                outcome.status = "timed-out"
                where = f"during {outcome.last_task}" if outcome.last_task else "before this host was reached"
                outcome.message = f"{stopped} {where}"
                continue
            if dark.get(name):
                outcome.status, outcome.message = "unreachable", outcome.message or "unreachable"
            elif failures.get(name):
                outcome.status, outcome.message = "failed", outcome.message or "failed"
            elif outcome.ok or outcome.skipped:
                # It ran tasks but never reached the report (e.g. --tags without 'always').
                outcome.status = "ok"
            else:
                outcome.status = "not-run"
                outcome.message = "the play stopped before reaching this host"
        return self.outcomes

"""Host checks of the preflight stage: disks, ZFS, clock, container runtime, OFED, BMC event log."""

from __future__ import annotations

import json
import re
import shlex
from datetime import datetime, timezone

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service
from burnin.checks.gpu_identity import model_findings
from burnin.checks.registry import register
from burnin.parsers import ParseError, load_json
from burnin.parsers.host import parse_df, parse_ofed_version, parse_zpool_status_x
from burnin.parsers.nvidia_smi import parse_gpu_list
from burnin.result import Action, Finding, Result, critical, info, warning


@register
class OfedVersion(Check):
    name = "ofed_version"
    stages = ("preflight",)
    reads = ("ofed_info -s",)
    judges = ("pins.doca_ofed", "ib.hca_count")
    description = "DOCA-OFED / MLNX_OFED version matches the profile's pin (ofed_info -s)"
    timeout_s = 20

    def applies(self, profile: Profile) -> bool:
        return bool(profile.pins.doca_ofed) and profile.ib.hca_count > 0

    def command(self, profile: Profile) -> str:
        return "ofed_info -s"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        pin = str(profile.pins.doca_ofed)
        version = parse_ofed_version(output.stdout)
        findings = []
        # ofed_info prints the pin plus a build suffix (24.04-0.6.6 -> 24.04-0.6.6.0): a prefix match.
        if not (version.version == pin or version.version.startswith(pin + ".")):
            findings.append(
                critical(
                    f"OFED {version.version} installed, the profile pins {pin}",
                    Action.RECONFIGURE,
                    output.stdout.strip(),
                )
            )
        return Result.judged(self.name, findings, {"ofed": version.version, "flavour": version.flavour})


@register
class DiskUsage(Check):
    name = "disk_usage"
    stages = ("preflight",)
    service = Service.ALWAYS
    reads = ("df -Pk",)
    judges = ("host.disk_use_warn_pct", "host.disk_use_fail_pct")
    description = "every real filesystem below the profile's use limits (df)"
    timeout_s = 30
    whole_at_line_ends = True  # no end of its own (burnin.checks.base.judge)

    def command(self, profile: Profile) -> str:
        return "df -P -k -x tmpfs -x devtmpfs -x squashfs -x overlay"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        warn_at, fail_at = profile.host.disk_use_warn_pct, profile.host.disk_use_fail_pct
        mounts = parse_df(output.stdout)
        if not mounts:
            raise ParseError("df listed no filesystem")
        findings: list[Finding] = []
        for m in mounts:
            if m.use_percent is None:
                continue
            line = f"{m.filesystem} {m.use_percent}% used of {m.size_kib // 1024} MiB on {m.mount_point}"
            if m.use_percent >= fail_at:
                findings.append(
                    critical(
                        f"{m.mount_point} is {m.use_percent}% full (limit {fail_at:g}%)",
                        Action.RECONFIGURE,
                        line,
                        m.mount_point,
                    )
                )
            elif m.use_percent >= warn_at:
                findings.append(
                    warning(
                        f"{m.mount_point} is {m.use_percent}% full (warning at {warn_at:g}%)",
                        Action.MONITOR,
                        line,
                        m.mount_point,
                    )
                )
        metrics = {"max_use_pct": max((m.use_percent or 0) for m in mounts), "filesystems": len(mounts)}
        return Result.judged(self.name, findings, metrics)


@register
class ZfsPool(Check):
    name = "zfs_pool"
    stages = ("preflight",)
    reads = ("zpool status -x",)
    judges = ("host.zfs",)
    description = "ZFS pools healthy (zpool status -x), on profiles with a pool"
    timeout_s = 30

    def applies(self, profile: Profile) -> bool:
        return profile.host.zfs

    def command(self, profile: Profile) -> str:
        return "zpool status -x"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        status = parse_zpool_status_x(output.stdout)
        if status.no_pools:
            return Result.judged(
                self.name,
                [
                    critical(
                        "the profile expects a ZFS pool and there is none", Action.RECONFIGURE, output.stdout
                    )
                ],
            )
        if status.all_healthy:
            return Result.judged(self.name, [], {"pools_healthy": True})
        findings = [
            critical(
                f"ZFS pool {p.name} is {p.state}: {p.status or p.errors or ''}".rstrip(": "),
                Action.RMA if p.state == "FAULTED" else Action.RESEAT,
                f"pool: {p.name} state: {p.state} errors: {p.errors}",
                p.name,
            )
            for p in status.pools
        ]
        if not findings:
            findings = [critical("zpool reports a problem", Action.MONITOR, output.stdout)]
        return Result.judged(self.name, findings, {"pools_healthy": False})


@register
class ClockOffset(Check):
    name = "clock_offset"
    stages = ("preflight",)
    judges = ("host.max_clock_offset_s",)
    description = "the node's clock agrees with this machine's (TLS breaks on skewed clocks)"
    timeout_s = 10

    def command(self, profile: Profile) -> str:
        return "date -u +%s.%N"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        limit = profile.host.max_clock_offset_s
        last = (output.stdout.strip().splitlines() or [""])[-1].strip()
        # `date +%s.%N` prints digits, a dot, nine digits (GNU date(1): %N is nanoseconds,
        # zero-padded): float() would also take 'nan' (which compares false with everything, so
        # it passed), 'inf' or '1_700_000_000', and fewer digits are a number cut short.
        if not re.fullmatch(r"\d{1,12}\.\d{9}", last):
            raise ParseError(f"not a time from date +%s.%N: {last[:60]!r}")
        node_time = float(last)
        if output.started_at is None or output.finished_at is None:
            return Result.unknown(
                self.name,
                "no controller time to compare with (a saved output is not enough)",
                {"node_time": node_time},
            )
        # The node read its clock somewhere inside the round trip: only a reading outside that
        # window, by more than the limit, is skew. No false alarms from a slow link.
        offset = 0.0
        if node_time < output.started_at:
            offset = node_time - output.started_at
        elif node_time > output.finished_at:
            offset = node_time - output.finished_at
        evidence = f"node {node_time:.3f}, controller {output.started_at:.3f}..{output.finished_at:.3f}"
        findings = []
        if abs(offset) > limit:
            findings.append(
                critical(
                    f"clock is {offset:+.1f} s off (limit {limit:g} s): fix NTP/chrony",
                    Action.RECONFIGURE,
                    evidence,
                )
            )
        return Result.judged(self.name, findings, {"offset_s": round(offset, 3)})


@register
class ContainerRuntime(Check):
    name = "container_gpu"
    stages = ("preflight",)
    service = Service.ON_REQUEST
    reads = ("nvidia-smi -L",)
    judges = ("gpu.count", "gpu.model")
    description = (
        "the container runtime can start a GPU container that sees every GPU, of the profile's model"
    )
    timeout_s = 180  # a first pull of the CUDA base image

    def command(self, profile: Profile) -> str:
        image = shlex.quote(profile.host.container_image)
        return f"docker run --rm --gpus all {image} nvidia-smi -L"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        expected = profile.gpu.count
        if output.rc != 0:
            last = (output.stderr or output.stdout).strip().splitlines()[-1:] or ["no output"]
            return Result.judged(
                self.name,
                [critical(f"a GPU container did not start (exit {output.rc})", Action.RECONFIGURE, last[0])],
                {"rc": output.rc},
            )
        gpus = parse_gpu_list(output.stdout)
        findings = []
        if len(gpus) != expected:
            findings.append(
                critical(
                    f"the container sees {len(gpus)} GPU(s), the profile has {expected}",
                    Action.RECONFIGURE,
                    output.stdout,
                )
            )
        # -L names each GPU: the model is judged as gpu_inventory judges it (docs/burnin.md,
        # "A PASS covers what the output shows").
        findings += model_findings([(f"GPU {g.index}", g.name) for g in gpus], profile.gpu.model)
        return Result.judged(self.name, findings, {"gpus_in_container": len(gpus)})


@register
class BmcEventLog(Check):
    """Judged from the node's record: the event log that `bringup discover` read from the BMC."""

    name = "bmc_event_log"
    stages = ("preflight",)
    description = "no new critical entries in the BMC's event log since the last run (from discovery)"

    def command(self, profile: Profile) -> None:
        return None

    def from_record(self, record: dict) -> str:
        hardware = record.get("hardware") or {}
        data = {
            "event_log": hardware.get("event_log"),
            "read_at": hardware.get("event_log_read_at"),
            "unread": hardware.get("event_log_unread"),
            "since": record.get("previous_check_at"),
        }
        return json.dumps(data, indent=1) + "\n"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        try:
            data = load_json(output.stdout)
        except json.JSONDecodeError as exc:
            raise ParseError(f"not the event-log JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ParseError("not the event-log JSON object")
        entries = data.get("event_log")
        if entries is None:
            return Result.unknown(self.name, "the BMC event log was never read: run `bringup discover`")
        if not isinstance(entries, list):
            raise ParseError("event_log is not a list")
        since = _parse_time(data.get("since"))
        findings = []
        new = 0
        for e in entries:
            if not isinstance(e, dict):
                raise ParseError("an event-log entry is not an object")
            created = _parse_time(e.get("created"))
            if since is not None and created is not None and created <= since:
                continue
            new += 1
            line = f"{e.get('created') or '?'} {e.get('severity')} {e.get('message_id') or ''} {e.get('message')}"
            if str(e.get("severity", "")).lower() == "critical":
                findings.append(critical(f"BMC logged: {e.get('message')}", Action.MONITOR, line, "BMC"))
            else:
                findings.append(warning(f"BMC logged: {e.get('message')}", Action.MONITOR, line, "BMC"))
        findings.append(info(f"event log read at {data.get('read_at')}"))
        # Entries whose severity discovery could not read: the log is not known to be clean.
        unread = data.get("unread") if isinstance(data.get("unread"), dict) else None
        incomplete = (
            f"the BMC event log was not fully read: {unread.get('count')} entries of unknown severity "
            f"({unread.get('why')})"
            if unread
            else ""
        )
        return Result.judged(
            self.name, findings, {"new_entries": new, "entries": len(entries)}, incomplete=incomplete
        )


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)

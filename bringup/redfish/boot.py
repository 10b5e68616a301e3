"""One-time boot override (PXE, or CD for virtual media), written and read back.

``BootSourceOverrideTarget`` + ``BootSourceOverrideEnabled: Once``, in UEFI unless the
profile says legacy. Where the system exposes ``@Redfish.Settings`` (iDRAC 10) the PATCH goes
to its settings object; if that object refuses the boot properties the system itself is
patched. The result is verified by reading it back.

Before the PATCH the vendor's pre-change checks run (Dell: Lifecycle Controller ready, no
pending configuration job). One that cannot run is named in the result, so the node gets an
event saying so; with ``bmc_require_prechecks: true`` for the host it refuses the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bringup.core.errors import BadInput
from bringup.redfish.context import BmcContext
from bringup.redfish.errors import ActionFailed, NotSupported, Refused
from bringup.redfish.messages import link
from bringup.redfish.vendors.base import Vendor

MODES = {"uefi": "UEFI", "legacy": "Legacy"}


@dataclass
class BootResult:
    target: str
    mode: str
    patched: str
    enabled: str | None = None
    verified: bool = False
    pending: bool = False  # written to a settings object: applies at the next reset
    warnings: list[str] = field(default_factory=list)
    prechecks_skipped: list[str] = field(default_factory=list)  # why each check did not run

    def record(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "mode": self.mode,
            "enabled": self.enabled,
            "patched": self.patched,
            "verified": self.verified,
            "pending": self.pending,
            "warnings": self.warnings,
            "prechecks_skipped": self.prechecks_skipped,
        }


def run_prechecks(ctx: BmcContext, *, config: bool) -> list[str]:
    """The vendor's pre-change checks: why each one that could not run did not, or
    ``Refused`` when the host requires them (``bmc_require_prechecks``)."""
    skipped = list(ctx.vendor.before_change(ctx, config=config) or [])
    if skipped and ctx.client.endpoint.require_prechecks:
        raise Refused(
            f"{ctx.url}: {'; '.join(skipped)}; nothing was changed, because bmc_require_prechecks is "
            "set for this host"
        )
    return skipped


def boot_body(vendor: Vendor, current: dict[str, Any], target: str, mode: str) -> dict[str, Any]:
    """The PATCH body (pure)."""
    boot: dict[str, Any] = {"BootSourceOverrideTarget": target, "BootSourceOverrideEnabled": "Once"}
    have = current.get("BootSourceOverrideMode")
    if vendor.send_boot_mode == "always" or (have is not None and have != mode):
        boot["BootSourceOverrideMode"] = mode
    return {"Boot": boot}


def judge(
    boot: dict[str, Any], target: str, mode: str, sent_mode: bool
) -> tuple[bool, list[str], str | None]:
    """(verified, warnings, problem) for a read-back Boot object (pure). ``problem`` is set
    when the override is not in place at all."""
    warnings: list[str] = []
    got_target, enabled = boot.get("BootSourceOverrideTarget"), boot.get("BootSourceOverrideEnabled")
    if got_target != target:
        return False, warnings, f"reads back BootSourceOverrideTarget={got_target}, not {target}"
    if enabled == "Disabled" or enabled is None:
        return False, warnings, f"reads back BootSourceOverrideEnabled={enabled}, not Once"
    if enabled == "Continuous":
        warnings.append(
            f"the BMC reads back BootSourceOverrideEnabled=Continuous, not Once: the node will boot from "
            f"{target} on every boot until the override is cleared"
        )
    got_mode = boot.get("BootSourceOverrideMode")
    if sent_mode and got_mode is not None and got_mode != mode:
        warnings.append(f"BootSourceOverrideMode reads back {got_mode}, not {mode}")
    return True, warnings, None


def _patch(ctx: BmcContext, path: str, body: dict[str, Any]) -> None:
    try:
        ctx.client.patch(path, body)
    except ActionFailed as exc:
        if exc.status != 428:  # 428: this BMC wants If-Match with the resource's ETag
            raise
        etag = ctx.client.get_response(path).headers.get("etag")
        ctx.client.patch(path, body, etag=etag)


def set_boot_once(ctx: BmcContext, target: str = "Pxe", mode: str = "uefi") -> BootResult:
    mode_value = MODES.get(mode.lower())
    if mode_value is None:
        raise BadInput(f"boot mode must be uefi or legacy, got {mode!r}")
    skipped = run_prechecks(ctx, config=True)
    system = ctx.refresh_system()
    current = system.get("Boot")
    if not isinstance(current, dict):
        raise NotSupported(f"{ctx.url}: the system has no Boot object (no boot override)")
    allowed = current.get("BootSourceOverrideTarget@Redfish.AllowableValues")
    if isinstance(allowed, list) and allowed and target not in allowed:
        raise NotSupported(f"{ctx.url}: boot target {target} not offered (offered: {', '.join(allowed)})")
    body = boot_body(ctx.vendor, current, target, mode_value)
    settings = link(system, "@Redfish.Settings", "SettingsObject")
    result = BootResult(target, mode_value, settings or ctx.system_path, prechecks_skipped=skipped)
    try:
        _patch(ctx, result.patched, body)
    except ActionFailed as exc:
        diagnosed = ctx.vendor.diagnose(ctx, exc)
        if diagnosed is not exc or not settings or exc.status not in (400, 405):
            raise diagnosed from None
        result.warnings.append(
            f"the settings object refused the boot override ({exc.message}); patched the system"
        )
        result.patched = ctx.system_path
        try:
            _patch(ctx, ctx.system_path, body)
        except ActionFailed as again:
            raise ctx.vendor.diagnose(ctx, again) from None

    sent_mode = "BootSourceOverrideMode" in body["Boot"]
    seen = ctx.refresh_system().get("Boot") or {}
    verified, warnings, problem = judge(seen, target, mode_value, sent_mode)
    if not verified and result.patched != ctx.system_path:
        pending = ctx.client.get(result.patched).get("Boot") or {}
        ok, pending_warnings, pending_problem = judge(pending, target, mode_value, sent_mode)
        if ok:
            verified, seen, result.pending = True, pending, True
            warnings = [*pending_warnings, "written to the settings object: applies at the next reset"]
        else:
            problem = pending_problem
    if not verified:
        raise ActionFailed(f"{ctx.url}: the BMC accepted the boot override but {problem}")
    result.verified, result.enabled = True, seen.get("BootSourceOverrideEnabled")
    result.warnings += warnings
    return result

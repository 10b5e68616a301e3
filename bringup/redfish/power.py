"""Power on, off (graceful, then forced), cycle, and wait until the BMC reports the new state.

An action that may have reached the BMC is never sent twice: when its answer is lost the
state is polled, and only the state decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bringup.redfish.context import BmcContext
from bringup.redfish.errors import ActionFailed, AmbiguousAction, NotSupported, StateTimeout

ACTIONS = ("on", "off", "cycle", "status")
STANDARD_RESETS = frozenset({"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart"})


@dataclass(frozen=True)
class PowerOptions:
    graceful_timeout: float = (
        120.0  # how long GracefulShutdown gets before ForceOff (0: straight to ForceOff)
    )
    timeout: float = 300.0  # how long any state change may take to show
    poll: float = 2.0


@dataclass
class PowerResult:
    action: str
    before: str | None
    after: str | None
    steps: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "before": self.before,
            "after": self.after,
            "steps": self.steps,
            "seconds": round(self.seconds, 1),
        }


def reset_types(ctx: BmcContext) -> frozenset[str] | None:
    """ResetTypes this system accepts (AllowableValues or its ActionInfo), None if unknown."""
    action = (ctx.system.get("Actions") or {}).get("#ComputerSystem.Reset") or {}
    allowed = action.get("ResetType@Redfish.AllowableValues")
    if isinstance(allowed, list) and allowed:
        return frozenset(allowed)
    info_path = action.get("@Redfish.ActionInfo")
    if isinstance(info_path, str):
        info = ctx.client.get_optional(info_path) or {}
        for param in info.get("Parameters") or []:
            if param.get("Name") == "ResetType" and isinstance(param.get("AllowableValues"), list):
                return frozenset(param["AllowableValues"])
    return None


class PowerControl:
    def __init__(
        self,
        ctx: BmcContext,
        options: PowerOptions | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.ctx = ctx
        self.options = options or PowerOptions()
        self._sleep, self._clock = sleep, clock
        self._allowed = reset_types(ctx)

    def state(self) -> str | None:
        return self.ctx.refresh_system().get("PowerState")

    def allows(self, reset_type: str) -> bool:
        return reset_type in (self._allowed if self._allowed is not None else STANDARD_RESETS)

    def send(self, reset_type: str, steps: list[str]) -> None:
        if not self.allows(reset_type):
            raise NotSupported(
                f"{self.ctx.url}: ResetType {reset_type} is not offered (offered: "
                f"{', '.join(sorted(self._allowed or []))})"
            )
        action = (self.ctx.system.get("Actions") or {}).get("#ComputerSystem.Reset") or {}
        target = action.get("target") or f"{self.ctx.system_path}/Actions/ComputerSystem.Reset"
        try:
            self.ctx.client.post(target, {"ResetType": reset_type})
            steps.append(f"{reset_type} accepted")
        except AmbiguousAction as exc:
            steps.append(f"{reset_type}: answer lost ({exc.message}); watching the state instead")
        except ActionFailed as exc:
            raise self.ctx.vendor.diagnose(self.ctx, exc) from None

    def wait_for(self, want: str, timeout: float) -> str:
        deadline = self._clock() + timeout
        last = None
        while True:
            last = self.state()
            if last == want:
                return last
            if self._clock() >= deadline:
                raise StateTimeout(
                    f"{self.ctx.url}: PowerState is still {last} after {timeout:g} s (wanted {want})"
                )
            self._sleep(self.options.poll)

    # -- actions ----------------------------------------------------------------------------

    def on(self) -> PowerResult:
        t0 = self._clock()
        before = self.state()
        result = PowerResult("on", before, before)
        if before == "On":
            result.steps.append("already On")
        else:
            self.send("On", result.steps)
            result.after = self.wait_for("On", self.options.timeout)
        result.seconds = self._clock() - t0
        return result

    def off(self) -> PowerResult:
        t0 = self._clock()
        before = self.state()
        result = PowerResult("off", before, before)
        if before == "Off":
            result.steps.append("already Off")
            return result
        if self.options.graceful_timeout > 0 and self.allows("GracefulShutdown"):
            self.send("GracefulShutdown", result.steps)
            try:
                result.after = self.wait_for("Off", self.options.graceful_timeout)
                result.seconds = self._clock() - t0
                return result
            except StateTimeout:
                result.steps.append(f"still on after {self.options.graceful_timeout:g} s: ForceOff")
        self.send("ForceOff", result.steps)
        result.after = self.wait_for("Off", self.options.timeout)
        result.seconds = self._clock() - t0
        return result

    def cycle(self) -> PowerResult:
        """Off (graceful, then forced) and on again: both states are seen, so the cycle is proven."""
        t0 = self._clock()
        off = self.off()
        on = self.on()
        return PowerResult("cycle", off.before, on.after, off.steps + on.steps, self._clock() - t0)

    def status(self) -> PowerResult:
        state = self.state()
        return PowerResult("status", state, state)

    def restart(self) -> PowerResult:
        """Boot the node now: On when off, ForceRestart when on (off/on where that is not offered)."""
        t0 = self._clock()
        before = self.state()
        if before != "On":
            result = self.on()
        elif self.allows("ForceRestart"):
            result = PowerResult("restart", before, before)
            self.send("ForceRestart", result.steps)
            # A restart may pass through Off too fast to see; On again is what counts.
            result.after = self.wait_for("On", self.options.timeout)
        else:
            result = self.cycle()
        result.action, result.seconds = "restart", self._clock() - t0
        return result

    def run(self, action: str) -> PowerResult:
        if action not in ACTIONS:
            raise ValueError(f"power action must be one of {', '.join(ACTIONS)}")
        return getattr(self, action)()

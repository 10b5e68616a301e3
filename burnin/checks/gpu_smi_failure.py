"""nvidia-smi's error-only answers as failures with their action, for every check that reads an
nvidia-smi output: any of its commands prints one of these lines instead of its output.

- "Unable to determine the device handle for GPU <bus>: Unknown Error" (or "GPU is lost"): the
  driver lost a GPU from the bus, which Xid 79 reports in the kernel log; NVIDIA's resolution for
  Xid 79 is a reboot (https://docs.nvidia.com/deploy/xid-errors/), and a GPU that falls off again
  is reseated (docs/burnin.md, kernel_log).
- "No devices were found": the driver runs but has no GPU (none on the bus, or none it could
  initialise): reboot; when none comes back, reseat and check the BIOS PCIe settings.
- "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver": no driver
  loaded (not installed, or not built for the running kernel): reinstall it (`bringup configure`).
"""

from __future__ import annotations

from burnin.checks.base import CommandOutput
from burnin.parsers.nvidia_smi import smi_failure
from burnin.result import Action, Finding, Result, critical

_WHAT = {
    "gpu_lost": (
        "has fallen off the bus (nvidia-smi cannot reach it): reboot; reseat it if it recurs",
        Action.REBOOT,
    ),
    "no_devices": (
        "nvidia-smi found no GPU: reboot; if none comes back, reseat the GPUs and check the BIOS PCIe settings",
        Action.REBOOT,
    ),
    "no_driver": (
        "nvidia-smi cannot reach the NVIDIA driver (not loaded, or not built for this kernel): reinstall it",
        Action.RECONFIGURE,
    ),
}


def smi_failure_finding(output: CommandOutput) -> Finding | None:
    """The failure an error-only answer of nvidia-smi says, or None for any other output."""
    failure = smi_failure(output.stdout)
    if failure is None:
        return None
    message, action = _WHAT[failure.kind]
    if failure.kind == "gpu_lost":
        subject = f"GPU {failure.bus_id}" if failure.bus_id else "a GPU"
        return critical(f"{subject} {message}", action, failure.line, subject)
    return critical(message, action, failure.line)


def smi_failure_result(check: str, output: CommandOutput) -> Result | None:
    """A FAIL with that finding, for a check to return in place of judging the output."""
    finding = smi_failure_finding(output)
    return None if finding is None else Result.judged(check, [finding])

"""Which GPU vendor's tools a check uses, so that a profile runs its own vendor's checks only
(docs/platforms.md, "GPU vendors").

Derived unless declared: a check that reads nvidia-smi, DCGM, gpu-burn, nvbandwidth or the
fabric manager's log (``Check.reads``, the tool names of burnin/evaluate/markers.py), or whose
command runs one of NVIDIA's programs (a check judged from its own record reads no tool by name),
runs only on a profile whose ``gpu.vendor`` is nvidia; one that reads or runs amd-smi or rocm-smi
only on an amd profile (and the ROCm Validation Suite, rvs); any other check (the kernel log, IB, the disks) on both.
A check may declare its vendors instead (``Check.vendors``): pcie_links reads sysfs and loads
the GPUs with burnin-stress, whose text names nvbandwidth in a comment; the declaration, not such
words, decides where it runs. The collectives are both vendors': rccl-tests, AMD's port of
nccl-tests, builds the same programs (all_reduce_perf) and prints the same format (https://github.com/ROCm/rccl-tests).
"""

from __future__ import annotations

import re

from bringup.profiles.load import Profile
from burnin.checks.base import Check

# Tool-name prefixes (burnin/evaluate/markers.py) that only one vendor's GPUs answer.
VENDOR_TOOLS: dict[str, tuple[str, ...]] = {
    "nvidia": ("nvidia-smi", "dcgmi", "gpu-burn", "nvbandwidth", "nv-fabricmanager"),
    "amd": ("amd-smi", "rocm-smi", "rvs"),
}
# The programs a check's command runs that only one vendor's GPUs answer.
VENDOR_COMMANDS: dict[str, re.Pattern[str]] = {
    "nvidia": re.compile(r"\b(?:nvidia-smi|dcgmi|nvbandwidth|gpu_burn)\b"),
    "amd": re.compile(r"\b(?:amd-smi|rocm-smi|rvs)\b"),
}


def check_vendor(check: Check, profile: Profile | None = None) -> str | None:
    """The GPU vendor whose tools the check reads (or, given a profile, its command runs there),
    or None for a check of no vendor (or of every vendor it declares)."""
    if check.vendors:
        return check.vendors[0] if len(check.vendors) == 1 else None
    for vendor, prefixes in VENDOR_TOOLS.items():
        if any(tool.startswith(prefixes) for tool in check.reads):
            return vendor
    command = check.command(profile) if profile is not None else None
    for vendor, pattern in VENDOR_COMMANDS.items():
        if command and pattern.search(command):
            return vendor
    return None


def fits_vendor(check: Check, profile: Profile) -> bool:
    """Whether the check may run on the profile's GPUs."""
    if check.vendors:
        return profile.gpu.vendor in check.vendors
    vendor = check_vendor(check, profile)
    return vendor is None or vendor == profile.gpu.vendor

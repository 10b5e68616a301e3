"""Hardware profiles for tests: the shipped one (with ``--set`` overrides) or a minimal one.

A profile is validated like any other (bringup/profiles/model.py), so a test cannot build one the
product would refuse; ``minimal`` fills the required keys with neutral values and lays the test's
own keys over them, leaving every optional key unset.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bringup.profiles.load import Profile, apply_overrides, load_profile, parse_profile
from tests.paths import REPO

SHIPPED_DIR = REPO / "inventories" / "profiles"
SHIPPED_NAME = "h100-sxm-8x400g"

# The required keys, nothing else.
REQUIRED: dict[str, Any] = {
    "description": "a test profile",
    "boot_mode": "uefi",
    "gpu": {
        "model": "NVIDIA H100 80GB HBM3",
        "count": 8,
        "memory_gib": 80,
        "nvlink_links_per_gpu": 18,
        "nvswitch": True,
    },
    "pcie": {"gpu": {"gen": 5, "width": 16}, "nic": {"gen": 5, "width": 16}},
    "ib": {"hca_count": 8, "rate_gbps": 400, "link_layer": "InfiniBand"},
    "pins": {"driver": "535.183.01"},
    "floors": {
        "ib_write_bw_fraction": 0.97,
        "nccl_busbw_single_node_gbps": 460,
        "nccl_busbw_multi_node_gbps": 360,
    },
    "diag": {"dcgm_level": 3},
}


def shipped(*overrides: str) -> Profile:
    """The shipped h100-sxm-8x400g profile, with ``--set`` style overrides applied."""
    profile, problems = load_profile(SHIPPED_NAME, SHIPPED_DIR)
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def minimal(data: dict[str, Any] | None = None, name: str = "x", path: Path | None = None) -> Profile:
    """A valid profile of the required keys with ``data`` laid over them."""
    merged = _merged({"name": name, **REQUIRED}, data or {})
    profile, problems = parse_profile(merged, f"{name}.yml")
    assert profile is not None, problems
    return profile.at(path if path is not None else Path(f"{name}.yml"))

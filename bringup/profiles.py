"""Hardware profiles: what a node of a kind must have, and the thresholds to judge it by.

A profile is ``inventories/profiles/<name>.yml``. Every figure carries a comment saying where
it comes from (DESIGN.md idea 5). The schema below is the contract between profiles and the
checks that read them; ``validate_profile`` is pure and returns every problem at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bringup.problems import Problem
from bringup.yamlio import YamlError, load_yaml_file

NUMBER = (int, float)

# dotted path -> (accepted types, required)
PROFILE_SCHEMA: dict[str, tuple[tuple[type, ...], bool]] = {
    "name": ((str,), True),
    "description": ((str,), True),
    "boot_mode": ((str,), True),
    "gpu.model": ((str,), True),
    "gpu.count": ((int,), True),
    "gpu.memory_gib": (NUMBER, True),
    "gpu.nvlink_links_per_gpu": ((int,), True),
    "gpu.nvswitch": ((bool,), True),
    "pcie.gpu.gen": ((int,), True),
    "pcie.gpu.width": ((int,), True),
    "pcie.nic.gen": ((int,), True),
    "pcie.nic.width": ((int,), True),
    "pcie.nvme.gen": ((int,), False),
    "pcie.nvme.width": ((int,), False),
    "ib.hca_count": ((int,), True),
    "ib.rate_gbps": (NUMBER, True),
    "ib.link_layer": ((str,), True),
    "pins.driver": ((str,), True),
    "pins.fabric_manager": ((str,), False),
    "pins.cuda": ((str,), False),
    "pins.dcgm": ((str,), False),
    "pins.doca_ofed": ((str,), False),
    "pins.hca_firmware": ((str,), False),
    "pins.vbios": ((str,), False),
    "pins.dcgm_exporter": ((str,), False),
    "pins.container_toolkit": ((str,), False),
    "pins.nccl": ((str,), False),
    "pins.nccl_tests": ((str,), False),
    "pins.perftest": ((str,), False),
    "pins.infiniband_diags": ((str,), False),
    "pins.pciutils": ((str,), False),
    "pins.stress_ng": ((str,), False),
    "pins.fio": ((str,), False),
    "floors.ib_write_bw_fraction": (NUMBER, True),
    "floors.ib_write_bw_bidir_gbps": (NUMBER, False),
    "floors.nccl_busbw_single_node_gbps": (NUMBER, True),
    "floors.nccl_busbw_multi_node_gbps": (NUMBER, True),
    "floors.h2d_gbps": (NUMBER, False),
    "floors.d2d_gbps": (NUMBER, False),
    "floors.matmul_tflops_fraction_of_best": (NUMBER, False),
    "floors.matmul_tflops": (NUMBER, False),
    "diag.dcgm_level": ((int,), True),
    "diag.stress_minutes": (NUMBER, False),
    "diag.pcie_load_seconds": (NUMBER, False),
    "diag.ib_load_seconds": (NUMBER, False),
    "diag.ib_rounds": ((int,), False),
    "diag.nccl_soak_minutes": (NUMBER, False),
    "diag.nccl_group_size": ((int,), False),
    "diag.nccl_iteration_timeout_s": (NUMBER, False),
    "diag.nccl_tests": ((list,), False),
    "host.disk_use_warn_pct": (NUMBER, False),
    "host.disk_use_fail_pct": (NUMBER, False),
    "host.max_clock_offset_s": (NUMBER, False),
    "host.zfs": ((bool,), False),
    "host.container_image": ((str,), False),
    "host.kernel_log_allowlist": ((list,), False),
    "provisioning.nic": ((str,), False),
}

BOOT_MODES = ("uefi", "legacy")
LINK_LAYERS = ("InfiniBand", "Ethernet")
FRACTIONS = ("floors.ib_write_bw_fraction", "floors.matmul_tflops_fraction_of_best")
POSITIVE = (
    "gpu.count",
    "gpu.memory_gib",
    "ib.rate_gbps",
    "pcie.gpu.width",
    "pcie.nic.width",
    "diag.dcgm_level",
)


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    data: dict[str, Any] = field(repr=False)

    def get(self, dotted: str, default: Any = None) -> Any:
        present, value = _lookup(self.data, dotted)
        return value if present else default


def _lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    value = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def validate_profile(data: Any, path: str, expected_name: str | None = None) -> list[Problem]:
    """Every problem with a profile's content (pure)."""
    if not isinstance(data, dict):
        return [Problem(path, None, None, "a profile must be a YAML mapping")]
    problems: list[Problem] = []
    for dotted, (types, required) in PROFILE_SCHEMA.items():
        present, value = _lookup(data, dotted)
        if not present or value is None:
            if required:
                problems.append(Problem(path, None, dotted, "missing"))
            continue
        # bool is an int in Python; a count of True is a typo, not a number.
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            want = " or ".join(t.__name__ for t in types)
            problems.append(
                Problem(path, None, dotted, f"must be {want}, got {type(value).__name__} {value!r}")
            )
            continue
        if dotted in POSITIVE and value <= 0:
            problems.append(Problem(path, None, dotted, f"must be positive, got {value}"))
        if dotted in FRACTIONS and not 0 < value <= 1:
            problems.append(Problem(path, None, dotted, f"is a fraction and must be in (0, 1], got {value}"))
    present, mode = _lookup(data, "boot_mode")
    if present and isinstance(mode, str) and mode not in BOOT_MODES:
        problems.append(
            Problem(path, None, "boot_mode", f"must be one of {', '.join(BOOT_MODES)}, got {mode!r}")
        )
    present, layer = _lookup(data, "ib.link_layer")
    if present and isinstance(layer, str) and layer not in LINK_LAYERS:
        problems.append(
            Problem(path, None, "ib.link_layer", f"must be one of {', '.join(LINK_LAYERS)}, got {layer!r}")
        )
    name = data.get("name")
    if expected_name and isinstance(name, str) and name != expected_name:
        problems.append(Problem(path, None, "name", f"is {name!r} but the file is named {expected_name!r}"))
    return problems


def profile_path(name: str, profiles_dir: Path) -> Path:
    return profiles_dir / f"{name}.yml"


def load_profile(name: str, profiles_dir: Path) -> tuple[Profile | None, list[Problem]]:
    """Read and validate one profile; returns (profile or None, problems)."""
    path = profile_path(name, profiles_dir)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in profiles_dir.glob("*.yml"))) or "none"
        return None, [
            Problem(str(path), None, None, f"unknown profile {name!r} (profiles in {profiles_dir}: {known})")
        ]
    try:
        data = load_yaml_file(path)
    except YamlError as exc:
        return None, [Problem(str(path), None, None, str(exc))]
    problems = validate_profile(data, str(path), expected_name=name)
    return (None if problems else Profile(name, path, data)), problems

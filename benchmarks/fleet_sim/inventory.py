"""A synthetic rack inventory for the controller benchmarks: N hosts, one group, the shipped
profiles beside it and the BMC password in a 0600 file (what `bringup inventory check` wants)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def write_rack_inventory(
    inv: Path, rack: str, hosts: Mapping[str, Mapping[str, Any]], profile: str = "h100-sxm-8x400g"
) -> Path:
    """``inv/<rack>.yml`` with ``hosts`` (name -> host vars) under one group of Dell BMCs."""
    inv.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "inventories" / "profiles", inv / "profiles", dirs_exist_ok=True)
    secret = inv / "bench.pass"
    secret.write_text("pw\n")
    os.chmod(secret, 0o600)
    group = {
        "profile": profile,
        "bmc_vendor": "dell",
        "bmc_username": "root",
        "bmc_password": "file:bench.pass",
    }
    doc = {"all": {"vars": group, "children": {rack: {"hosts": {n: dict(v) for n, v in hosts.items()}}}}}
    path = inv / f"{rack}.yml"
    path.write_text(yaml.safe_dump(doc))
    return path

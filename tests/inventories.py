"""Writing a rack inventory for a test: the shipped profiles beside it and a 0600 password file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from bringup.core.credentials import write_secret_file
from tests.paths import REPO


def write_rack(
    inv: Path,
    rack: str,
    hosts: dict[str, dict[str, Any]],
    *,
    password: str = "pw",
    password_file: str | None = None,
    **group_vars: Any,
) -> Path:
    """``inv/<rack>.yml`` with ``hosts`` in group ``rack``; group vars default to the shipped H100
    profile, a Dell BMC, user root and the password in ``<rack>.pass``. Returns ``inv``."""
    if not (inv / "profiles").is_dir():
        shutil.copytree(REPO / "inventories" / "profiles", inv / "profiles")
    secret = password_file or f"{rack}.pass"
    write_secret_file(inv / secret, password + "\n")
    group = {
        "profile": "h100-sxm-8x400g",
        "bmc_vendor": "dell",
        "bmc_username": "root",
        "bmc_password": f"file:{secret}",
        **group_vars,
    }
    doc = {"all": {"vars": group, "children": {rack: {"hosts": hosts}}}}
    (inv / f"{rack}.yml").write_text(yaml.safe_dump(doc))
    return inv

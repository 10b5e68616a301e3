"""The MAAS rack vars: defaults, checks (every problem at once) and the settings they make."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.core.credentials import CredentialError, CredentialRef, parse_ref
from bringup.inventory.provision_vars import setting_problems

DEFAULTS: dict[str, Any] = {
    "maas_distro_series": "jammy",
    "maas_tags": [],
    "maas_poll_interval_s": 10.0,
    # A GPU server's POST alone takes minutes; commissioning boots it twice (enlist + tests).
    "maas_commission_timeout_s": 1800.0,
    "maas_deploy_timeout_s": 2700.0,
    "maas_architecture": "amd64/generic",
}
TAG_NAME = re.compile(r"^[\w-]+$")  # what MAAS accepts as a tag name


@dataclass(frozen=True)
class MaasSettings:
    url: str
    api_key: CredentialRef
    distro_series: str
    tags: tuple[str, ...]
    poll_interval_s: float
    commission_timeout_s: float
    deploy_timeout_s: float
    architecture: str
    user_data_template: Path | None


def _seconds(vars_: Mapping[str, Any], name: str, problems: list[str]) -> float:
    value = vars_.get(name, DEFAULTS[name])
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        problems.append(f"{name}: expected a number of seconds, got {value!r}")
        return float(DEFAULTS[name])
    if seconds <= 0:
        problems.append(f"{name}: must be more than 0, got {value!r}")
    return seconds


def settings_from_vars(rack_vars: Mapping[str, Any], base_dir: Path) -> tuple[MaasSettings | None, list[str]]:
    """Read and check the MAAS rack vars; every problem at once, each naming its var."""
    problems: list[str] = []
    url = rack_vars.get("maas_url")
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        problems.append(f"maas_url: expected the MAAS URL, e.g. http://maas.example:5240/MAAS, got {url!r}")
    else:  # typed as the inventory check types it: no control character, no space
        problems += [f"{key}: {why}" for key, why in setting_problems({"maas_url": url})]
    key_ref: CredentialRef | None = None
    if rack_vars.get("maas_api_key") in (None, ""):
        problems.append("maas_api_key: missing (a reference: env:VARIABLE or file:/path, mode 0600)")
    else:
        try:
            key_ref = parse_ref(rack_vars["maas_api_key"], base_dir)
        except CredentialError as exc:
            problems.append(f"maas_api_key: {exc}")
    distro = rack_vars.get("maas_distro_series", DEFAULTS["maas_distro_series"])
    if not isinstance(distro, str) or not distro:
        problems.append(f"maas_distro_series: expected a series name like jammy, got {distro!r}")
    tags = rack_vars.get("maas_tags") or []
    if isinstance(tags, str) or not isinstance(tags, list):
        problems.append(f"maas_tags: expected a list of tag names, got {tags!r}")
        tags = []
    for tag in tags:
        if not isinstance(tag, str) or not TAG_NAME.match(tag):
            problems.append(f"maas_tags: {tag!r} is not a MAAS tag name (letters, digits, _ and -)")
    arch = rack_vars.get("maas_architecture", DEFAULTS["maas_architecture"])
    if not isinstance(arch, str) or "/" not in arch:
        problems.append(f"maas_architecture: expected e.g. amd64/generic, got {arch!r}")
    template: Path | None = None
    if rack_vars.get("maas_user_data"):
        template = Path(str(rack_vars["maas_user_data"])).expanduser()
        if not template.is_absolute():
            template = base_dir / template
        if not template.is_file():
            problems.append(f"maas_user_data: template {template} does not exist")
    interval = _seconds(rack_vars, "maas_poll_interval_s", problems)
    commission = _seconds(rack_vars, "maas_commission_timeout_s", problems)
    deploy = _seconds(rack_vars, "maas_deploy_timeout_s", problems)
    if problems or key_ref is None:
        return None, problems
    return (
        MaasSettings(
            url=str(url),
            api_key=key_ref,
            distro_series=str(distro),
            tags=tuple(tags),
            poll_interval_s=interval,
            commission_timeout_s=commission,
            deploy_timeout_s=deploy,
            architecture=str(arch),
            user_data_template=template,
        ),
        [],
    )

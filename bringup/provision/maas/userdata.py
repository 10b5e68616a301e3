"""Per-node cloud-init user data for a MAAS deploy: the built-in cloud-config or the rack's template."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from bringup.provision.backend import ProvisionTarget


def _as_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def ssh_keys(value: Any, base_dir: Path) -> list[str]:
    """``ssh_authorized_keys`` items: a public key line, or a path to a file of them."""
    keys: list[str] = []
    for item in _as_list(value):
        if re.match(r"^(ssh-|ecdsa-|sk-)", item):
            keys.append(item.strip())
            continue
        path = Path(item).expanduser()
        path = path if path.is_absolute() else base_dir / path
        keys += [line.strip() for line in path.read_text().splitlines() if line.strip()]
    return keys


def render_user_data(
    target: ProvisionTarget, node_vars: Mapping[str, Any], template: Path | None, base_dir: Path
) -> str:
    """The node's cloud-init user data: hostname, SSH keys, NTP (or the rack's own template)."""
    keys = ssh_keys(node_vars.get("ssh_authorized_keys"), base_dir)
    ntp = _as_list(node_vars.get("ntp_servers"))
    if template is not None:
        import jinja2

        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        return env.from_string(template.read_text()).render(
            hostname=target.name,
            target=target,
            ssh_authorized_keys=keys,
            ntp_servers=ntp,
            vars=dict(node_vars),
        )
    config: dict[str, Any] = {"hostname": target.name, "preserve_hostname": False, "manage_etc_hosts": True}
    if keys:
        config["ssh_authorized_keys"] = keys
    if ntp:
        config["ntp"] = {"enabled": True, "servers": ntp}
    return "#cloud-config\n" + yaml.safe_dump(config, sort_keys=False)

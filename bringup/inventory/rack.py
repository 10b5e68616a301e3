"""Rack inventories: one Ansible YAML inventory per rack, read by Ansible and by bringup alike.

    all:
      vars:
        profile: h100-sxm-8x400g
        bmc_vendor: dell
        bmc_username: root
        bmc_password: env:R01_BMC_PASSWORD
      hosts:
        gpu001: {bmc_address: 10.10.0.11, rack_unit: 1, ansible_host: 10.20.0.11}

Host variables are merged the way Ansible does it, closest wins: ``all`` vars, then group vars
from the outermost group inwards, then the host's own. Validation is pure and returns every
problem at once, each naming the file, the host and the field. The variables bringup itself
reads from a host are a typed model (``InventoryHost``); every other variable is Ansible's and
travels untouched in ``vars``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from bringup.core.credentials import (
    SECRET_KEY,
    CredentialError,
    CredentialRef,
    VaultText,
    file_problem,
    parse_ref,
)
from bringup.core.hostnames import address_problem, hostname_problem
from bringup.core.problems import Problem
from bringup.core.yamlio import YamlError, load_yaml_file
from bringup.inventory.provision_vars import control_character, control_problems, setting_problems
from bringup.profiles.load import Profile, load_profile

BMC_VENDORS = ("dell", "hpe", "supermicro", "generic")


def _vendor(value: Any) -> Any:
    if value not in BMC_VENDORS:
        raise PydanticCustomError(
            "not_a_vendor",
            "must be one of {choices}, got {value}",
            {"choices": ", ".join(BMC_VENDORS), "value": repr(value)},
        )
    return value


def _rack_unit(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PydanticCustomError(
            "not_a_unit", "must be a positive integer, got {value}", {"value": repr(value)}
        )
    return value


def _bmc_address(value: Any) -> Any:
    why = bmc_address_problem(value) if isinstance(value, str) else "is not a host name, IP address or URL"
    if why and why.startswith(_CONTROL):  # value_problems() names it where it is written
        raise PydanticCustomError(_REPORTED_ELSEWHERE, "a control character")
    if why:
        raise PydanticCustomError("not_an_address", "{why}: {value}", {"why": why, "value": repr(value)})
    return value


def bmc_address_problem(address: str) -> str | None:
    """What makes ``address`` no BMC address (a host name, an IP address or an http(s) URL with
    an optional port), or None (pure). Checked before urlsplit reads it: urlsplit drops CR, LF and
    tab silently and raises on a bad port, so either would reach the BMC or end in a crash."""
    if (ch := control_character(address)) is not None:
        return f"{_CONTROL} ({ch})"
    if (ch := _separator(address)) is not None:
        return f"holds a line separator, a control character to many readers ({ch})"
    if any(c.isspace() for c in address):
        return "holds a space"
    if address.split("://", 1)[-1].split("/", 1)[0].count(":") > 1 and "[" not in address:
        return "looks like a bare IPv6 address: write it in brackets, [fe80::1] or https://[fe80::1]:443"
    parts = urlsplit(address if "://" in address else f"https://{address}")
    if parts.scheme not in ("https", "http"):
        return f"is a {parts.scheme}:// URL; a BMC is reached over https:// (or http://)"
    if parts.username is not None or parts.password is not None:
        return "holds a user name or password; give them as bmc_username and bmc_password"
    try:
        port = parts.port
    except ValueError:
        return "has a port that is not a number from 1 to 65535"
    if port == 0:
        return "has port 0; a port is a number from 1 to 65535"
    if not parts.hostname:
        return "is not a host name, IP address or URL"
    return None


_CONTROL = "holds a control character"


def _separator(text: str) -> str | None:
    """A Unicode line or paragraph separator (U+2028, U+2029, U+0085): a line break to many readers."""
    m = re.search("[\u2028\u2029\x85]", text)
    return None if m is None else repr(m.group())[1:-1]


def _text(value: Any) -> str:
    return str(value)  # a profile or user name written as a YAML number is still a name


class InventoryHost(BaseModel):
    """One host of a rack: the variables bringup reads, typed, and all of them in ``vars``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    rack: str
    bmc_address: Annotated[str, BeforeValidator(_bmc_address)] = Field(
        description="The BMC: host name, IP address or URL (https://10.0.0.1:8443)."
    )
    bmc_vendor: Annotated[Literal[BMC_VENDORS], BeforeValidator(_vendor)] = Field(
        description="dell, hpe, supermicro or generic: a hint (the BMC's own answer wins)."
    )
    profile: Annotated[str, BeforeValidator(_text)] = Field(description="The hardware profile's name.")
    rack_unit: Annotated[int, BeforeValidator(_rack_unit)] = Field(description="Rack unit, from 1.")
    bmc_username: Annotated[str, BeforeValidator(_text)] = Field(description="The BMC account.")
    bmc_password: CredentialRef = Field(
        description="A reference to the BMC password (env:VAR, file:PATH or an Ansible Vault value), never the password."
    )
    bmc_allow_http: bool = Field(
        False, description="Allow a plain-HTTP (http://) BMC address: the password crosses in cleartext."
    )
    bmc_system: Annotated[str, BeforeValidator(_text)] | None = Field(
        None,
        description="Which of the BMC's systems this host is (a Systems member id, such as FCH2219V1K4), "
        "for a BMC that manages several; default: its only one.",
    )
    bmc_require_prechecks: bool = Field(
        False, description="Refuse a BMC change when the vendor's pre-change checks cannot run."
    )
    vars: dict[str, Any] = Field(default_factory=dict, repr=False)

    @field_validator("bmc_password", mode="before")
    @classmethod
    def _reference(cls, value: Any, info: ValidationInfo) -> CredentialRef:
        context = info.context or {}
        # One load_rack judges each distinct reference once: usually every host inherits the same
        # one, and a file: reference costs a path resolution and a stat (10,000 hosts: 0.3 s).
        seen: dict[Any, tuple[CredentialRef | None, str | None]] = context.get("refs", {})
        key = value if isinstance(value, (str, VaultText)) else None
        if key is None or key not in seen:
            try:
                ref = parse_ref(value, context.get("base_dir"))
            except CredentialError:
                ref = None
            why = file_problem(ref) if ref is not None and ref.kind == "file" else None
            if key is not None:
                seen[key] = (ref, why)
        else:
            ref, why = seen[key]
        if ref is None:
            # Reported once, where it is written, by plaintext_secrets(): the host is just not built.
            raise PydanticCustomError(_REPORTED_ELSEWHERE, "not a reference")
        if why:
            raise PydanticCustomError("credential_file", "{why}", {"why": why})
        return ref


_REPORTED_ELSEWHERE = "reported_elsewhere"
HOST_VARS = tuple(f for f in InventoryHost.model_fields if f not in ("name", "rack", "vars"))


@dataclass(frozen=True)
class Rack:
    name: str
    path: Path
    hosts: list[InventoryHost]
    profiles: dict[str, Profile]

    def host(self, name: str) -> InventoryHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"rack {self.name} has no host {name!r}")


def default_inventory_dir() -> Path:
    return Path(os.environ.get("BRINGUP_INVENTORY_DIR", "inventories"))


def resolve_rack_path(rack: str, inventory_dir: Path) -> Path:
    """A rack is a name (``r01`` -> ``inventories/r01.yml``) or a path to an inventory file."""
    candidate = Path(rack)
    if candidate.suffix in (".yml", ".yaml") or os.sep in rack:
        return candidate
    for suffix in (".yml", ".yaml"):
        path = inventory_dir / f"{rack}{suffix}"
        if path.exists():
            return path
    return inventory_dir / f"{rack}.yml"


# -- the Ansible group tree -------------------------------------------------------------


@dataclass
class _Scope:
    """Variables from one place in the tree, with how deep that place is."""

    depth: int
    group: str
    vars: dict[str, Any]


def _walk_group(
    name: str,
    body: Any,
    depth: int,
    path: str,
    problems: list[Problem],
    scopes: dict[str, list[_Scope]],
    host_vars: dict[str, dict[str, Any]],
    inherited: list[_Scope],
    defined: dict[str, str],
) -> None:
    if body is None:
        return
    if not isinstance(body, dict):
        problems.append(
            Problem(path, None, f"group {name}", "a group must be a mapping of hosts/vars/children")
        )
        return
    unknown = set(body) - {"hosts", "vars", "children"}
    for key in sorted(unknown):
        problems.append(
            Problem(path, None, f"group {name}", f"unknown key {key!r} (expected hosts, vars, children)")
        )
    group_vars = body.get("vars") or {}
    if not isinstance(group_vars, dict):
        problems.append(Problem(path, None, f"group {name}.vars", "must be a mapping"))
        group_vars = {}
    chain = [*inherited, _Scope(depth, name, group_vars)]
    hosts = body.get("hosts") or {}
    if not isinstance(hosts, dict):
        problems.append(Problem(path, None, f"group {name}.hosts", "must be a mapping of host names"))
        hosts = {}
    for host, hvars in hosts.items():
        host = str(host)
        if hvars is not None and not isinstance(hvars, dict):
            problems.append(Problem(path, host, None, "host variables must be a mapping"))
            hvars = {}
        scopes.setdefault(host, []).extend(chain)
        if hvars:
            # Listing a host in another group without variables is only membership (Ansible's
            # way); its variables given twice would be merged silently, one BMC lost.
            if host in defined:
                problems.append(
                    Problem(
                        path,
                        host,
                        None,
                        f"defined in group {defined[host]} and again in group {name}: "
                        "give a host's variables in one place (list it elsewhere without variables)",
                    )
                )
            defined.setdefault(host, name)
        host_vars.setdefault(host, {}).update(hvars or {})
    children = body.get("children") or {}
    if not isinstance(children, dict):
        problems.append(Problem(path, None, f"group {name}.children", "must be a mapping of groups"))
        return
    for child, child_body in children.items():
        _walk_group(str(child), child_body, depth + 1, path, problems, scopes, host_vars, chain, defined)


def merged_host_vars(data: Any, path: str) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
    """Host name -> variables after Ansible-style merging (pure)."""
    problems: list[Problem] = []
    if not isinstance(data, dict) or not data:
        return {}, [
            Problem(path, None, None, "an inventory must be a YAML mapping of groups (usually 'all:')")
        ]
    scopes: dict[str, list[_Scope]] = {}
    host_vars: dict[str, dict[str, Any]] = {}
    defined: dict[str, str] = {}
    for group, body in data.items():
        # Top-level groups other than 'all' are implicit children of 'all'.
        depth = 0 if group == "all" else 1
        _walk_group(str(group), body, depth, path, problems, scopes, host_vars, [], defined)
    merged: dict[str, dict[str, Any]] = {}
    for host in host_vars:
        out: dict[str, Any] = {}
        seen: set[tuple[int, str]] = set()
        for scope in sorted(scopes[host], key=lambda s: (s.depth, s.group)):
            if (scope.depth, scope.group) not in seen:
                seen.add((scope.depth, scope.group))
                out.update(scope.vars)
        out.update(host_vars[host])
        merged[host] = out
    return merged, problems


def _all_var_places(data: Any) -> Iterator[tuple[str | None, str, dict[str, Any]]]:
    """(host or None, where, vars) for every vars mapping in the tree, to scan for secrets."""
    stack = [(str(g), b) for g, b in data.items()] if isinstance(data, dict) else []
    while stack:
        group, body = stack.pop()
        if not isinstance(body, dict):
            continue
        if isinstance(body.get("vars"), dict):
            yield None, f"group {group} vars", body["vars"]
        if isinstance(body.get("hosts"), dict):
            for host, hvars in body["hosts"].items():
                if isinstance(hvars, dict):
                    yield str(host), "", hvars
        if isinstance(body.get("children"), dict):
            stack.extend((str(c), b) for c, b in body["children"].items())


def value_problems(data: Any, path: str) -> list[Problem]:
    """Control characters anywhere, and provisioning settings of the wrong type, each named
    where it is written (pure): a newline in pxe_domain would write dnsmasq.conf lines."""
    problems = []
    for host, where, variables in _all_var_places(data):
        typed = dict(setting_problems(variables))
        for key, value in variables.items():
            fld = f"{key} ({where})" if where else str(key)
            if key in typed:
                problems.append(Problem(path, host, fld, typed[key]))
            elif not (SECRET_KEY.search(str(key)) and isinstance(value, str)):  # reported as a secret
                problems += [Problem(path, host, fld, why) for why in control_problems(str(key), value)]
    return problems


def host_name_problems(names: Iterator[str] | list[str], path: str) -> list[Problem]:
    """One problem per host whose name is no RFC 1123 host name (pure): the name goes into
    hostfiles, Slurm hostlists, CSV and command lines, where anything else is read as something
    else. The host is shown quoted, so a space or a newline in it shows."""
    return [
        Problem(path, repr(name), "host name", why)
        for name in names
        if (why := hostname_problem(name)) is not None
    ]


# The variables that name a node's own address: ssh, Ansible and mpirun are given them as a host.
NODE_ADDRESS_VARS = ("ansible_host", "provision_ip")


def node_address_problems(merged: dict[str, dict[str, Any]], path: str) -> list[Problem]:
    """One problem per node address that is neither an IP address nor an RFC 1123 host name
    (pure): ssh reads '-oProxyCommand=...' given as a host as an option, and a space would be a
    second field of an mpirun hostfile. A Jinja template is Ansible's to render, not judged here."""
    problems = []
    for host, variables in merged.items():
        for key in NODE_ADDRESS_VARS:
            value = variables.get(key)
            if value in (None, "") or (isinstance(value, str) and "{{" in value):
                continue
            if (why := address_problem(str(value))) is not None:
                problems.append(Problem(path, host, key, f"{value!r} is no IP address, and {why}"))
    return problems


def plaintext_secrets(data: Any, path: str) -> list[Problem]:
    """Every secret-named variable whose value is not a reference (pure)."""
    problems = []
    for host, where, variables in _all_var_places(data):
        for key, value in variables.items():
            if not SECRET_KEY.search(str(key)) or isinstance(value, (VaultText, bool)):
                continue  # a flag (bmc_basic_auth: true) is no secret
            try:
                parse_ref(value)
            except CredentialError as exc:
                fld = f"{key} ({where})" if where else str(key)
                problems.append(Problem(path, host, fld, str(exc)))
    return problems


# -- host validation ----------------------------------------------------------------------


def _bmc_key(address: str) -> str:
    """Normalise a BMC address so ``https://10.0.0.1/`` and ``10.0.0.1`` compare equal."""
    parts = urlsplit(address if "://" in address else f"https://{address}")
    port = parts.port or (80 if parts.scheme == "http" else 443)
    return f"{(parts.hostname or '').lower()}:{port}"


def build_host(
    name: str,
    rack: str,
    hvars: dict[str, Any],
    path: str,
    base_dir: Path,
    refs: dict[Any, Any] | None = None,
) -> tuple[InventoryHost | None, list[Problem]]:
    """The typed host from its merged variables, or the problems with them (file, host, field).
    ``refs``: the credential references already judged in this load, shared by its hosts."""
    # An empty value is as good as none: "missing".
    given = {f: hvars[f] for f in HOST_VARS if hvars.get(f) not in (None, "")}
    context = {"base_dir": base_dir, "refs": {} if refs is None else refs}
    try:
        host = InventoryHost.model_validate(
            {**given, "name": name, "rack": rack, "vars": hvars}, context=context
        )
    except ValidationError as exc:
        return None, [
            Problem(path, name, str(e["loc"][0]), "missing" if e["type"] == "missing" else e["msg"])
            for e in exc.errors(include_url=False)
            if e["type"] != _REPORTED_ELSEWHERE
        ]
    return host, []


def duplicates(hosts: list[InventoryHost], path: str) -> list[Problem]:
    problems = []
    seen_bmc: dict[tuple[str, str | None], str] = {}
    seen_unit: dict[int, str] = {}
    for h in hosts:
        key = (_bmc_key(h.bmc_address), h.bmc_system)  # one BMC may manage several systems
        if key in seen_bmc:
            problems.append(
                Problem(
                    path,
                    h.name,
                    "bmc_address",
                    f"duplicate BMC address {h.bmc_address} (also host {seen_bmc[key]})",
                )
            )
        seen_bmc.setdefault(key, h.name)
        if h.rack_unit in seen_unit:
            problems.append(
                Problem(
                    path,
                    h.name,
                    "rack_unit",
                    f"rack unit {h.rack_unit} is also given to host {seen_unit[h.rack_unit]}",
                )
            )
        seen_unit.setdefault(h.rack_unit, h.name)
    return problems


def plain_http_bmcs(hosts: list[InventoryHost], path: str) -> list[Problem]:
    """A warning per host whose BMC is reached over plain HTTP: basic auth in cleartext."""
    return [
        Problem(
            path,
            h.name,
            "bmc_address",
            f"{h.bmc_address} is plain HTTP: the BMC password crosses the network in cleartext"
            + ("" if h.bmc_allow_http else " (refused unless bmc_allow_http: true or --allow-http)"),
            warning=True,
        )
        for h in hosts
        if h.bmc_address.strip().lower().startswith("http://")
    ]


def unset_env_refs(hosts: list[InventoryHost], path: str) -> list[Problem]:
    """One warning per environment variable that is referenced but not set in this shell."""
    users: dict[str, list[str]] = {}
    for h in hosts:
        if h.bmc_password.kind == "env" and h.bmc_password.target not in os.environ:
            users.setdefault(h.bmc_password.target, []).append(h.name)
    return [
        Problem(
            path,
            names[0] if len(names) == 1 else None,
            "bmc_password",
            f"environment variable {var} is not set here (used by {len(names)} host(s))",
            warning=True,
        )
        for var, names in sorted(users.items())
    ]


def load_rack(rack: str, inventory_dir: Path | None = None) -> tuple[Rack | None, list[Problem]]:
    """Read and validate a rack inventory and the profiles it names.

    Returns (rack, problems); rack is None when any problem is an error, not a warning.
    """
    inventory_dir = inventory_dir or default_inventory_dir()
    path = resolve_rack_path(rack, inventory_dir)
    spath = str(path)
    if not path.is_file():
        known = (
            ", ".join(sorted(p.stem for p in inventory_dir.glob("*.yml"))) if inventory_dir.is_dir() else ""
        )
        hint = f" (racks in {inventory_dir}: {known})" if known else ""
        return None, [Problem(spath, None, None, f"no such inventory{hint}")]
    try:
        data = load_yaml_file(path)
    except YamlError as exc:
        return None, [Problem(spath, None, None, str(exc))]
    merged, problems = merged_host_vars(data, spath)
    problems += plaintext_secrets(data, spath)
    problems += value_problems(data, spath)
    problems += host_name_problems(sorted(merged), spath)
    problems += node_address_problems(merged, spath)
    if not merged and not problems:
        problems.append(Problem(spath, None, None, "the inventory has no hosts"))
    rack_name = path.stem
    hosts = []
    refs: dict[Any, Any] = {}
    for name in sorted(merged):
        host, host_problems = build_host(name, rack_name, merged[name], spath, path.parent, refs)
        problems += host_problems
        if host is not None:
            hosts.append(host)
    problems += duplicates(hosts, spath)
    problems += unset_env_refs(hosts, spath)
    problems += plain_http_bmcs(hosts, spath)
    profiles_dir = path.parent / "profiles"
    profiles: dict[str, Profile] = {}
    for profile_name in sorted({h.profile for h in hosts}):
        profile, profile_problems = load_profile(profile_name, profiles_dir)
        if profile is not None:
            profiles[profile_name] = profile
        users = [h.name for h in hosts if h.profile == profile_name]
        for p in profile_problems:
            if p.field is None and "unknown profile" in p.message:
                # Name the hosts that use it: the inventory is where the fix goes.
                problems += [Problem(spath, u, "profile", p.message) for u in users]
            else:
                problems.append(p)
    if any(not p.warning for p in problems):
        return None, problems
    return Rack(rack_name, path, hosts, profiles), problems

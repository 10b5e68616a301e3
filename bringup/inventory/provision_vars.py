"""The provisioning settings an inventory gives, typed: every value that reaches dnsmasq.conf
(dnsmasq runs as root), an iPXE script or cloud-init is checked for what it is (address, CIDR,
domain name, URL, interface name, path, user name, SSH key) before any of them is written.

A newline in ``pxe_domain`` would otherwise write a dnsmasq line of its own (``dhcp-script=``
runs a program as root; ``conf-dir=`` reads more configuration), and one in
``pxe_install_iso`` an iPXE line (``chain http://elsewhere/``). Pure: the inventory check and
the backends both ask this module, so a value the check passes is one a backend may render.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from bringup.core.hostnames import LABEL

# C0 controls, DEL and C1 controls; TEXT_CONTROL leaves out tab and newline (multi-line text).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Variables bringup itself reads (its own or Ansible's connection variables): one line each.
# Any other variable is Ansible's data and may hold multi-line text (a certificate, a motd).
READ_BY_BRINGUP = ("bmc_", "pxe_", "maas_", "provision", "ansible_", "install_", "ntp_", "boot_")

_INTERFACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}$")  # Linux: at most 15 characters
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# A public key line; options (from="...") before the key and a comment after it allowed.
_SSH_KEY = re.compile(
    r"(^|\s)(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+) [A-Za-z0-9+/]+={0,3}(\s|$)"
)


def control_character(text: str, allow_multiline: bool = False) -> str | None:
    """The first control character in ``text``, written as an escape (``\\n``), or None."""
    m = (TEXT_CONTROL if allow_multiline else CONTROL).search(text)
    return None if m is None else repr(m.group())[1:-1]


def _fail(kind: str, what: str, value: Any) -> PydanticCustomError:
    return PydanticCustomError(kind, "{what}, got {value}", {"what": what, "value": repr(value)})


def _one_line(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _fail("not_text", "expected a single value", value)
    text = str(value)
    if (ch := control_character(text)) is not None:
        raise PydanticCustomError(
            "control_character",
            "holds a control character ({ch}): it would start a line of its own in dnsmasq.conf, "
            "the iPXE script or cloud-init",
            {"ch": ch},
        )
    return text.strip()


def _ipv4(value: Any) -> str:
    text = _one_line(value)
    try:
        return str(ipaddress.IPv4Address(text))
    except ValueError:
        raise _fail("not_an_ipv4", "expected an IPv4 address", value) from None


def _cidr(value: Any) -> str:
    text = _one_line(value)
    try:
        return ipaddress.IPv4Network(text, strict=False).with_prefixlen
    except ValueError:
        raise _fail("not_a_cidr", "expected an IPv4 network such as 10.20.0.0/24", value) from None


def is_domain(text: str) -> bool:
    labels = text.rstrip(".").split(".")
    return len(text) <= 253 and all(LABEL.fullmatch(label) for label in labels)  # RFC 1123 labels


def _domain(value: Any) -> str:
    text = _one_line(value)
    if not is_domain(text):
        raise _fail("not_a_domain", "expected a domain name such as lab.example", value)
    return text


def _host(value: Any) -> str:
    text = _one_line(value)
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        if is_domain(text):
            return text
    raise _fail("not_a_host", "expected a host name or IP address", value)


def _url(schemes: tuple[str, ...]) -> Any:
    def check(value: Any) -> str:
        text = _one_line(value)
        parts = urlsplit(text)
        if parts.scheme not in schemes or not parts.hostname or re.search(r"\s", text):
            raise _fail("not_a_url", f"expected a {' or '.join(schemes)} URL without spaces", value)
        return text

    return check


def _path(absolute: bool) -> Any:
    def check(value: Any) -> str:
        text = _one_line(value)
        if not text or (absolute and not text.startswith("/")):
            raise _fail("not_a_path", "expected an absolute path" if absolute else "expected a path", value)
        return text

    return check


def _pattern(regex: re.Pattern[str], what: str) -> Any:
    def check(value: Any) -> str:
        text = _one_line(value)
        if not regex.search(text):
            raise _fail("bad_value", what, value)
        return text

    return check


def _items(value: Any) -> list[Any]:
    """A list, or a comma-separated string, as the rack variables allow."""
    if value in (None, ""):
        return []
    if isinstance(value, str):
        _one_line(value)  # a control character is refused before the split could hide it
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise _fail("not_a_list", "expected a list or a comma-separated string", value)


def _list_of(check: Any) -> Any:
    return lambda value: [check(v) for v in _items(value)]


def _port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise _fail("not_a_port", "expected a TCP port (1-65535)", value)
    port = int(value)
    if not 1 <= port <= 65535:
        raise _fail("not_a_port", "expected a TCP port (1-65535)", value)
    return port


_V = BeforeValidator
Url = Annotated[str, _V(_url(("http", "https")))]


class ProvisioningVars(BaseModel):
    """The rack variables that reach dnsmasq, iPXE or cloud-init; each optional here (the
    backend says which it needs), each checked for its type when given."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    pxe_mode: Annotated[Literal["install", "agent"], _V(_one_line)] | None = None
    pxe_interface: Annotated[str, _V(_pattern(_INTERFACE, "expected a network interface name"))] | None = None
    pxe_server_ip: Annotated[str, _V(_ipv4)] | None = None
    pxe_subnet: Annotated[str, _V(_cidr)] | None = None
    pxe_router: Annotated[str, _V(_ipv4)] | None = None
    pxe_dns_servers: Annotated[list[str], _V(_list_of(_ipv4))] | None = None
    ntp_servers: Annotated[list[str], _V(_list_of(_host))] | None = None
    pxe_domain: Annotated[str, _V(_domain)] | None = None
    pxe_http_port: Annotated[int, _V(_port)] | None = None
    pxe_install_kernel: Url | None = None
    pxe_install_initrd: Url | None = None
    pxe_install_iso: Url | None = None
    pxe_clock_reference: Annotated[str, _V(_url(("http", "https", "ntp")))] | None = None
    pxe_state_dir: Annotated[str, _V(_path(absolute=True))] | None = None
    pxe_agent_dir: Annotated[str, _V(_path(absolute=False))] | None = None
    pxe_dnsmasq: (
        Annotated[str, _V(_pattern(re.compile(r"^[^\s]+$"), "expected a program name or path"))] | None
    ) = None
    pxe_admin_user: Annotated[str, _V(_pattern(_USER, "expected a Linux user name"))] | None = None
    pxe_ssh_authorized_keys: (
        Annotated[list[str], _V(_list_of(_pattern(_SSH_KEY, "expected an SSH public key line")))] | None
    ) = None
    maas_url: Url | None = Field(None)


SETTINGS = frozenset(ProvisioningVars.model_fields)


def setting_problems(variables: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(variable, what is wrong) for every provisioning setting of the wrong type (pure).

    An empty value counts as not given, as the backends read it."""
    given = {k: v for k, v in variables.items() if k in SETTINGS and v not in (None, "")}
    try:
        ProvisioningVars.model_validate(given)
    except ValidationError as exc:
        return [(str(e["loc"][0]), e["msg"]) for e in exc.errors(include_url=False)]
    return []


def control_problems(name: str, value: Any) -> Iterator[str]:
    """What is wrong with a variable's name or value, nested lists and mappings included:
    a control character, except tab and newline in the values of variables bringup does not read."""
    if isinstance(name, str) and (ch := control_character(name)) is not None:
        yield f"the variable name holds a control character ({ch})"
    multiline = not str(name).startswith(READ_BY_BRINGUP)
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if (ch := control_character(item, allow_multiline=multiline)) is not None:
                yield f"holds a control character ({ch})"
                return
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)

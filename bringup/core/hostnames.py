"""Host names as RFC 1123 section 2.1 allows them (https://www.rfc-editor.org/rfc/rfc1123#section-2):
dot-separated labels of 1-63 letters, digits and '-', none starting or ending with '-', 253
characters in all.

A rack's host names end up in files other programs parse: an OpenMPI hostfile (``NAME slots=N``),
a Slurm hostlist (``gpu[001-004],login``), a CSV a spreadsheet opens, ssh and scontrol command
lines. A name inside this rule is safe in all of them; anything else (a space, a comma, a bracket,
a leading ``-`` or ``=``) would be read as something else there.
"""

from __future__ import annotations

import ipaddress
import re

MAX_LENGTH = 253
LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")  # one label, for fullmatch
RULE = "RFC 1123: letters, digits and '-' in dot-separated labels of 1-63, none starting or ending with '-'"


def hostname_problem(name: str) -> str | None:
    """Why ``name`` is no RFC 1123 host name, or None when it is one (pure)."""
    if not name:
        return f"empty: not a host name ({RULE})"
    if len(name) > MAX_LENGTH:
        return f"{len(name)} characters: not a host name, which has at most {MAX_LENGTH} ({RULE})"
    if not all(LABEL.fullmatch(label) for label in name.split(".")):
        return f"not a host name ({RULE})"
    return None


def address_problem(address: str) -> str | None:
    """Why ``address`` is neither an IP address nor a host name, or None (pure)."""
    try:
        ipaddress.ip_address(address)
        return None
    except ValueError:
        return hostname_problem(address)

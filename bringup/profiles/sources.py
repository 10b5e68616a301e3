"""Every figure of a profile names its public source (docs/platforms.md, "Sources").

A profile's YAML is read as text, because the sources are comments: a figure line (``key: value``)
cites in its trailing comment, or in the comment lines right above it, one of

- ``[key]``: an entry of the file's sources block, a comment line ``#   [key] URL what it is``
  (a URL, or a docs/ page);
- a URL (``https://...``);
- a page of the project's docs (``docs/reference.md``), which names the public sources in turn.

``name`` and ``description`` are labels, not figures. A figure with no public source is left out of
the profile (its default applies, or the check does not judge it), never written without one.
Pure: text in, problems out; the unit test runs it over every shipped profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABELS = frozenset({"name", "description"})
_ENTRY = re.compile(r"^#\s+\[([a-z0-9][a-z0-9-]*)\]\s+(.*)$")
_FIGURE = re.compile(r"^(\s*)([A-Za-z_]\w*):(.*)$")
_COMMENT = re.compile(r"(?:^|\s)#\s?(.*)$")
_KEY = re.compile(r"\[([a-z0-9][a-z0-9-]*)\]")
_URL = re.compile(r"https?://\S+")
_DOC = re.compile(r"\bdocs/[\w./-]+\.md\b")


@dataclass(frozen=True)
class Unsourced:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


def source_entries(text: str) -> dict[str, str]:
    """The sources block: key -> the rest of its line (a URL and what it is)."""
    return {m.group(1): m.group(2) for line in text.splitlines() if (m := _ENTRY.match(line.strip()))}


def _cites(comment: str, keys: dict[str, str]) -> bool:
    return bool(_URL.search(comment) or _DOC.search(comment) or any(k in keys for k in _KEY.findall(comment)))


def unsourced_figures(text: str) -> list[Unsourced]:
    """Every figure line that cites no source, every ``[key]`` the sources block lacks, and every
    sources entry without a URL (pure)."""
    keys = source_entries(text)
    problems = [
        Unsourced(0, f"[{key}]", "a sources entry needs a URL or docs/*.md")
        for key, rest in keys.items()
        if not (_URL.search(rest) or _DOC.search(rest))
    ]
    path: list[tuple[int, str]] = []  # (indent, key) of the enclosing sections
    above: list[str] = []  # the comment lines right above the current line
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#"):
            above.append(stripped[1:])
            continue
        m = _FIGURE.match(raw)
        if not m:
            above = []
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
        comment_match = _COMMENT.search(rest)
        comment = comment_match.group(1) if comment_match else ""
        value = rest[: comment_match.start()].strip() if comment_match else rest.strip()
        while path and path[-1][0] >= indent:
            path.pop()
        dotted = ".".join([*(k for _, k in path), key])
        for cited in _KEY.findall(comment + " " + " ".join(above)):
            if cited not in keys:
                problems.append(Unsourced(number, dotted, f"cites [{cited}], which the sources block lacks"))
        if not value:
            path.append((indent, key))
        elif dotted not in LABELS and not _cites(comment, keys) and not _cites(" ".join(above), keys):
            problems.append(
                Unsourced(number, dotted, "no source: cite a [key] of the sources block, a URL or docs/*.md")
            )
        above = []
    return problems

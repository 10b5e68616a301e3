"""The page shell every HTML report shares: stylesheet, escaping, and ``render_page``, which wraps
sections in one self-contained file (inline CSS and scripts, nothing fetched).

The Content-Security-Policy allows styles inline and scripts only by the sha256 of each script
the page carries, so a script that reached the page any other way (say, inside a tool's output
that escaping missed) does not run and the browser reports it on the console.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Text that reaches the page: the five HTML-special characters escaped, control characters (tool
# output carries escape sequences and NULs) dropped; one str.translate call, which matters at a
# million strings (a 10,000-node report).
_ESCAPES = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;", ord('"'): "&quot;", ord("'"): "&#x27;"}
_ESCAPES.update({c: None for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]})

CSS = """
:root { --pass:#2e7d32; --warn:#b26a00; --fail:#c62828; --unknown:#6a1b9a; --none:#9e9e9e; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1320px; padding: 16px 24px 48px; color: #1b1b1b; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
.meta { color: #555; margin: 0 0 12px; } code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
.card b { display: block; font-size: 22px; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #f0f0f0; }
table.matrix td.v { text-align: center; font-weight: 600; color: #fff; min-width: 78px; }
.v-pass { background: var(--pass); } .v-warn { background: var(--warn); }
.v-fail { background: var(--fail); } .v-unknown { background: var(--unknown); }
td.v-none { background: #eee; color: #777 !important; font-weight: 400 !important; }
td.v-none.required { background: repeating-linear-gradient(45deg, #eee, #eee 4px, #ddd 4px, #ddd 8px); }
.golden-yes { color: var(--pass); font-weight: 600; } .golden-no { color: var(--fail); }
.legend span { display: inline-block; padding: 1px 8px; margin-right: 6px; border-radius: 3px; color: #fff; }
.empty { color: #666; font-style: italic; }
details { background: #fff; border: 1px solid #ddd; border-left: 6px solid var(--none); border-radius: 4px;
          margin: 6px 0; padding: 4px 10px; }
details.problem.fail { border-left-color: var(--fail); } details.problem.unknown { border-left-color: var(--unknown); }
details.problem.warn { border-left-color: var(--warn); }
summary { cursor: pointer; } summary .tag { font-weight: 600; }
pre { background: #f6f6f6; border: 1px solid #e3e3e3; padding: 8px; overflow-x: auto; max-height: 420px;
      white-space: pre-wrap; word-break: break-all; font-size: 12px; }
ul.reasons { margin: 4px 0; } .chart { background: #fff; border: 1px solid #ddd; border-radius: 6px; }
.swatch { display: inline-block; width: 14px; height: 10px; vertical-align: middle; margin: 0 4px 0 12px; }
"""


def esc(value: object) -> str:
    """``value`` as text in HTML (content or a quoted attribute)."""
    return str(value).translate(_ESCAPES)


def anchor(*parts: str) -> str:
    """An id built from names (anything outside [A-Za-z0-9_.-] becomes '_')."""
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]", "_", p) for p in parts)


def nice_step(span: float, ticks: int = 5) -> float:
    """A round axis step (1, 2, 2.5 or 5 times a power of ten) giving about ``ticks`` ticks."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def fmt(value: float) -> str:
    """A figure for a label: whole numbers as they are, others to 3 significant digits (a lab's
    0.04 GB/s floor is "0.04", not "0.0")."""
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


@dataclass(frozen=True)
class Section:
    """One part of a page: ``<section id=...><h2>title</h2>body</section>``, and the script it
    needs, if any (plain JavaScript, run once the page is parsed; the CSP admits it by hash)."""

    id: str
    title: str
    body: str
    script: str = ""


def script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def render_page(
    title: str, header: str, sections: Sequence[Section], footer: str = "", extra_css: str = ""
) -> str:
    """The whole page: ``header`` (trusted HTML) under the title, then the sections in order."""
    scripts = [s.script for s in sections if s.script]
    script_src = " ".join(f"'{script_hash(s)}'" for s in scripts)
    policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:" + (
        f"; script-src {script_src}" if scripts else ""
    )
    body = "\n".join(f'<section id="{esc(s.id)}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections)
    tail = "".join(f"<script>{s}</script>" for s in scripts)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}{extra_css}</style></head>
<body>
<header><h1>{esc(title)}</h1>{header}</header>
{body}
<footer>{footer}</footer>
{tail}
</body></html>
"""

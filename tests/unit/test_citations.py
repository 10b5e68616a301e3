"""Code, docs and tests cite the repository's own docs or a public source, nothing a clone lacks.

A clone has no design notes beside the checkout (the upper-case DESIGN, REFERENCE and LAB
notes, the `../shared` directory) and no issue tracker of the project's own, so a comment that
cites one sends its reader nowhere. The why lives in docs/design.md, the figures with their
public sources in docs/reference.md; an upstream report is cited by its URL.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCANNED = (
    "bringup",
    "burnin",
    "docs",
    "README.md",
    "inventories",
    "playbooks",
    "Makefile",
    "scripts",
    "tests",
    "benchmarks",
    "pyproject.toml",
)
SKIP_DIRS = {"__pycache__", ".venv", ".git", ".pytest_cache", ".ruff_cache", "node_modules"}
THIS_FILE = Path(__file__).resolve()

CITATION = re.compile(
    r"\b(?:DESIGN|REFERENCE|LAB)\.md\b"  # notes that lived beside the checkout
    r"|\.\./shared\b|\bshared/(?:samples|DESIGN|REFERENCE|LAB)\b"  # the directory that held them
    r"|\b[Ii]ssues?\s+#?\d+"  # "issue 13", "Issue #13", "issues 13", also across a line break
    r"|\b[Ii]ssue-\d+"  # "pre-issue-13"
)


def citations(text: str) -> list[tuple[int, str]]:
    """Every citation in ``text``: (1-based line of its start, the matched text)."""
    return [
        (text.count("\n", 0, m.start()) + 1, " ".join(m.group().split())) for m in CITATION.finditer(text)
    ]


def is_verbatim_capture(path: Path) -> bool:
    """A recorded tool output copied byte for byte from its public source: its `# SOURCE:` line
    quotes upstream trackers as they are, and tests keep the copies identical to the corpus.
    Lab-made ones (``*_DERIVED``, ``*_SYNTHETIC``) and the indexes are the project's own text."""
    return (
        path.parent.name == "samples"
        and path.name != "INDEX.md"
        and not path.stem.endswith(("_DERIVED", "_SYNTHETIC"))
    )


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _files(root: Path, names: tuple[str, ...]):
    for name in names:
        top = root / name
        if top.is_file():
            yield top
        elif top.is_dir():
            for path in sorted(top.rglob("*")):
                if path.is_file() and not SKIP_DIRS.intersection(path.relative_to(root).parts):
                    yield path


def scan(root: Path, names: tuple[str, ...] = SCANNED) -> list[str]:
    """``file:line: match`` for every citation in the text files under ``names`` of ``root``."""
    found = []
    for path in _files(root, names):
        if path.resolve() == THIS_FILE or is_verbatim_capture(path):
            continue
        text = _text(path)
        if text is None:
            continue
        rel = path.relative_to(root).as_posix()
        found += [f"{rel}:{line}: {match}" for line, match in citations(text)]
    return found


def test_nothing_cites_outside_the_repository():
    found = scan(REPO)
    assert found == [], (
        "cite docs/design.md, docs/reference.md or a public URL instead (a clone has none of these):\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("snippet", "line", "match"),
    [
        ("thresholds (DESIGN.md idea 5)", 1, "DESIGN.md"),
        ("x\n# 460 GB/s (REFERENCE.md, NCCL)", 2, "REFERENCE.md"),
        ("Recipe and timings: LAB.md", 1, "LAB.md"),
        ("samples in `../shared/samples/`", 1, "../shared"),
        ('"""Kernel logs (shared/samples/INDEX.md section 5)."""', 1, "shared/samples"),
        ("a\nb\n    # batched (issue 18).", 3, "issue 18"),
        ('"""Issue 13: hostile inventories.', 1, "Issue 13"),
        ("same as gpu-burn issue #7", 1, "issue #7"),
        ("issues 13 and 14", 1, "issues 13"),
        ("the run (as before issue\n13: everything kept)", 1, "issue 13"),
        ("evidence a pre-issue-13 store kept", 1, "issue-13"),
    ],
)
def test_each_form_of_citation_is_found_on_its_line(snippet, line, match):
    assert citations(snippet) == [(line, match)]


@pytest.mark.parametrize(
    "snippet",
    [
        "an issue with the BMC: the issue's defects, issues found on the way",
        "healthy GPUs spread ~9% (https://github.com/NVIDIA/nvbandwidth/issues/15)",
        "see docs/design.md, idea 3, and docs/reference.md, GPU; the lab in docs/lab.md",
        "--spool-dir /shared/burnin-spool",
        "a tissue 5 mm thick, reissue 2 tickets",
    ],
)
def test_ordinary_words_and_public_sources_are_not_citations(snippet):
    assert citations(snippet) == []


def test_scan_names_file_and_line_and_skips_binaries_and_verbatim_captures(tmp_path):
    (tmp_path / "pkg" / "samples").mkdir(parents=True)
    (tmp_path / "pkg" / "mod.py").write_text('"""Module."""\n\n# why: issue 13\n')
    (tmp_path / "pkg" / "blob.bin").write_bytes(b"\0issue 13")
    (tmp_path / "pkg" / "samples" / "capture.txt").write_text("# SOURCE: gpud issue #1085\n")
    (tmp_path / "pkg" / "samples" / "capture_DERIVED.txt").write_text("# SOURCE: DERIVED, issue 24\n")
    (tmp_path / "pkg" / "samples" / "INDEX.md").write_text("| a | perftest issue #132 |\n")
    (tmp_path / "README.md").write_text("See\nREFERENCE.md.\n")
    assert scan(tmp_path, ("pkg", "README.md")) == [
        "pkg/mod.py:3: issue 13",
        "pkg/samples/INDEX.md:1: issue #132",
        "pkg/samples/capture_DERIVED.txt:1: issue 24",
        "README.md:2: REFERENCE.md",
    ]

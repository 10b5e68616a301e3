"""Access to the sample captures in tests/fixtures/samples (verbatim public captures, sources in index.tsv).

Line 1 of every sample is a '# SOURCE: ...' provenance comment that the real tools never
print: ``load`` strips it, so the parsers see exactly the tool output.
"""

from __future__ import annotations

from tests.paths import TESTS

SAMPLES_DIR = TESTS / "fixtures" / "samples"


def load(name: str) -> str:
    text = (SAMPLES_DIR / name).read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    assert first.startswith("# SOURCE:"), f"{name}: line 1 is not the '# SOURCE:' comment"
    return rest


def names(prefix: str) -> list[str]:
    return sorted(p.name for p in SAMPLES_DIR.glob(f"{prefix}*"))

"""Access to the sample captures in tests/fixtures/samples (verbatim public captures, sources in index.tsv).

Line 1 of every sample is a '# SOURCE: ...' provenance comment that the real tools never
print: ``load`` strips it, so the parsers see exactly the tool output.
"""

from __future__ import annotations

import pytest

from tests import sample_index
from tests.paths import TESTS

SAMPLES_DIR = TESTS / "fixtures" / "samples"


def load(name: str) -> str:
    text = (SAMPLES_DIR / name).read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    assert first.startswith("# SOURCE:"), f"{name}: line 1 is not the '# SOURCE:' comment"
    return rest


def names(prefix: str) -> list[str]:
    return sorted(p.name for p in SAMPLES_DIR.glob(f"{prefix}*"))


def names_expecting_misses(prefix: str, product_says: str) -> list:
    """names(prefix), a sample expected to fail (strict xfail) where the index marks its `burnin
    evaluate` row as a known miss on which the product says `product_says` today (the marker's
    note, tests/sample_index.py): the test fails once the product reads the sample as labelled."""
    said = f"the product says {product_says} "
    misses = {r.name: r.why for r in sample_index.evaluate_rows() if r.known_miss and said in r.why}
    return [
        pytest.param(
            name, marks=[pytest.mark.xfail(strict=True, reason=misses[name][:120])] if name in misses else []
        )
        for name in names(prefix)
    ]

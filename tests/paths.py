"""Where the tests find the repository and their fixtures, wherever a test file sits."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
SAMPLES = FIXTURES / "samples"

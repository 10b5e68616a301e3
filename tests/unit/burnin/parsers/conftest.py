from __future__ import annotations

import pytest

from tests.unit.burnin.parsers._samples import load


@pytest.fixture
def sample():
    """sample(name) -> the tool output of tests/fixtures/samples/<name>, '# SOURCE:' line stripped."""
    return load

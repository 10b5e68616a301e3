from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def wide_tables(monkeypatch):
    """Tables wide enough not to fold the cells the tests look for (COLUMNS is not always read)."""
    from bringup.cli.ui import console

    monkeypatch.setattr(console, "_width", 250)

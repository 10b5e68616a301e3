"""The Redfish fixture trees (tests/fixtures/redfish/) for the pure reader and vendor tests."""

from __future__ import annotations

from tests.paths import TESTS

FIXTURES = TESTS / "fixtures" / "redfish"


def fixture(name: str) -> dict:
    from tests.doubles.redfish_server import load_fixture

    return load_fixture(name)[0]

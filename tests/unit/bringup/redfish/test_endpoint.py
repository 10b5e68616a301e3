"""Where a BMC is and how to talk to it (pure): the transport options and the BMC address."""

from __future__ import annotations

import pytest

from bringup.redfish.endpoint import TransportOptions, normalise_url


def test_transport_options():
    assert TransportOptions().cafile.endswith(".pem")  # verification on by default
    assert TransportOptions(insecure=True).cafile is None
    assert "NOT verified" in TransportOptions(insecure=True).tls_note
    with pytest.raises(ValueError, match="contradict"):
        TransportOptions(insecure=True, ca_bundle="/etc/ssl/ca.pem")
    assert TransportOptions(connect_timeout=2, read_timeout=9).timeout == (2, 9)


@pytest.mark.parametrize(
    "address, want",
    [
        ("10.0.0.1", "https://10.0.0.1"),
        ("http://10.0.0.1:8000/", "http://10.0.0.1:8000"),
        ("bmc-r01-u3", "https://bmc-r01-u3"),
    ],
)
def test_normalise_url(address, want):
    assert normalise_url(address) == want


def test_addresses_with_credentials_are_refused():
    with pytest.raises(ValueError, match="must not carry credentials"):
        normalise_url("https://root:calvin@10.0.0.1")

"""The MAAS API client's pure parts: the OAuth 1.0 PLAINTEXT header, the API key, the API base URL."""

from __future__ import annotations

import pytest

from bringup.provision.maas import ApiKey, api_base, oauth_header


def test_oauth_header_is_plaintext_with_empty_consumer_secret():
    key = ApiKey.parse("ck:tk:s3cret")
    header = oauth_header(key, nonce="n1", timestamp=1700000000)
    assert header.startswith("OAuth ")
    for part in (
        'oauth_version="1.0"',
        'oauth_signature_method="PLAINTEXT"',
        'oauth_consumer_key="ck"',
        'oauth_token="tk"',
        'oauth_signature="&s3cret"',
        'oauth_nonce="n1"',
        'oauth_timestamp="1700000000"',
    ):
        assert part in header
    assert "s3cret" not in repr(key)


def test_api_key_must_have_three_parts_and_is_never_echoed():
    with pytest.raises(ValueError) as err:
        ApiKey.parse("only-one-secret-part")
    assert "only-one-secret-part" not in str(err.value)


def test_api_base_accepts_region_url_or_api_url():
    assert api_base("http://m:5240/MAAS") == "http://m:5240/MAAS/api/2.0/"
    assert api_base("http://m:5240/MAAS/api/2.0/") == "http://m:5240/MAAS/api/2.0/"

"""The body cap on a gzip answer: decompressed piece by piece and refused one byte past the cap
(docs/redfish.md, "Bounds"); a gzip answer that is cut or not gzip is a bad answer, not a crash."""

from __future__ import annotations

import gzip

import pytest

from bringup.redfish.connection import BodyTooLarge, Connection, TransportError, size_text


def conn(max_body: int) -> Connection:
    return Connection("http", "127.0.0.1", 9, connect_timeout=1, read_timeout=1, max_body=max_body)


def test_an_answer_exactly_at_the_cap_is_kept_and_one_byte_more_is_refused():
    assert conn(1000)._gunzip(gzip.compress(b"x" * 1000)) == b"x" * 1000
    with pytest.raises(BodyTooLarge, match="decompressed is over the 1000 bytes cap"):
        conn(1000)._gunzip(gzip.compress(b"x" * 1001))


def test_every_member_of_a_multi_member_gzip_counts_toward_the_cap():
    two = gzip.compress(b"a" * 600) + gzip.compress(b"b" * 600)
    assert conn(1200)._gunzip(two) == b"a" * 600 + b"b" * 600
    with pytest.raises(BodyTooLarge):
        conn(1000)._gunzip(two)


@pytest.mark.parametrize(
    ("data", "why"),
    # mtime=0: the same bytes, so the same test id, in every pytest-xdist worker's collection
    [(gzip.compress(b"{}" * 100, mtime=0)[:-12], "cut short"), (b"not gzip at all", "bad gzip answer")],
    ids=["cut-short", "not-gzip"],
)
def test_a_cut_or_false_gzip_answer_is_a_bad_answer(data, why):
    with pytest.raises(TransportError, match=why) as info:
        conn(1 << 20)._gunzip(data)
    assert info.value.sent and not info.value.timeout


def test_sizes_are_said_in_mib_where_they_are_whole():
    assert (
        size_text(8 << 20) == "8 MiB" and size_text(3 << 19) == "1.5 MiB" and size_text(1000) == "1000 bytes"
    )

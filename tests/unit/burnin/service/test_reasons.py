"""Drain reasons: whose a reason is, and the 255-byte cut (slurmdbd keeps reasons in a TINYTEXT)."""

from __future__ import annotations

from burnin.service.reasons import (
    REASON_MAX_BYTES,
    DrainOrigin,
    drain_origin,
    fit_reason,
    health_finding,
    health_reason,
)


def test_origin_of_a_reason():
    assert drain_origin("bringup: gpu_ecc: GPU 3 has uncorrected errors") is DrainOrigin.HEALTH
    assert drain_origin("bringup nightly run 12") is DrainOrigin.PROJECT
    assert drain_origin("disk replaced, waiting on vendor") is DrainOrigin.OPERATOR
    assert drain_origin("bringup:no space") is DrainOrigin.OPERATOR  # not our exact prefix
    assert drain_origin("NHC: check_hw_ib: No IB port is ACTIVE") is DrainOrigin.OPERATOR
    assert drain_origin("") is DrainOrigin.OPERATOR


def test_a_short_reason_is_kept_on_one_line():
    assert (
        health_reason("disk_usage", "/ is 97% full\n(limit 95%)")
        == "bringup: disk_usage: / is 97% full (limit 95%)"
    )
    assert health_finding("bringup: disk_usage: / is 97% full") == "disk_usage: / is 97% full"


def test_a_long_reason_is_cut_at_a_word_within_255_bytes():
    finding = "GPU 3 (0000:9b:00.0) reports " + "an uncorrected volatile DRAM error " * 20
    reason = health_reason("gpu_ecc", finding)
    assert len(reason.encode()) <= REASON_MAX_BYTES
    assert reason.startswith("bringup: gpu_ecc: GPU 3 (0000:9b:00.0) reports an uncorrected")
    assert reason.endswith("...") and not reason.endswith(" ...")
    assert reason[:-3].endswith(("error", "an", "uncorrected", "volatile", "DRAM"))  # a whole word


def test_the_cut_never_splits_a_character():
    reason = fit_reason("bringup: x: " + "é" * 300)
    assert len(reason.encode()) <= REASON_MAX_BYTES
    reason.encode().decode()  # valid UTF-8
    assert reason.endswith("...")

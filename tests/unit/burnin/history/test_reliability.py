"""The study's worked examples (Kokolis et al. 2024, r_f = 6.5 per 1,000 node-days, 8 GPUs a node)."""

from datetime import timedelta

import pytest

from burnin.history import reliability as rel

RSC1 = 6.5


def test_mttf_of_a_16384_gpu_job_is_about_1_8_hours():
    assert rel.mttf_hours(16_384, RSC1, 8) == pytest.approx(1.8, rel=0.05)


def test_ettr_of_16000_gpus_60min_checkpoint_5min_restart_is_about_0_7():
    ettr = rel.expected_ettr(16_000, RSC1, 8, timedelta(minutes=60), timedelta(minutes=5))
    assert ettr == pytest.approx(0.7, rel=0.05)


def test_ettr_with_a_5min_checkpoint_is_about_0_93():
    ettr = rel.expected_ettr(16_000, RSC1, 8, timedelta(minutes=5), timedelta(minutes=5))
    assert ettr == pytest.approx(0.93, rel=0.05)


def test_checkpoint_for_target_inverts_the_ettr_formula():
    dt = rel.checkpoint_for(0.93, 16_000, RSC1, 8, timedelta(minutes=5))
    assert dt is not None
    assert rel.expected_ettr(16_000, RSC1, 8, dt, timedelta(minutes=5)) == pytest.approx(0.93, abs=1e-9)


def test_checkpoint_for_an_unreachable_target_is_none():
    # 131,072 GPUs at 6.5: the 5-min restart alone costs more than 1% of the time
    assert rel.checkpoint_for(0.99, 131_072, RSC1, 8, timedelta(minutes=5)) is None


def test_mttf_table_spans_8_to_131072_gpus_and_halves_as_size_doubles():
    table = rel.mttf_table(RSC1, 8)
    assert min(table) == 8 and max(table) == 131_072
    assert table[16] == pytest.approx(table[8] / 2)


def test_a_partial_node_counts_as_a_node():
    assert rel.nodes_for(9, 8) == 2


def test_bad_inputs_are_user_errors():
    with pytest.raises(rel.ReliabilityError):
        rel.expected_ettr(8, RSC1, 8, timedelta(0), timedelta(minutes=5))
    with pytest.raises(rel.ReliabilityError):
        rel.per_node_day(-1)
    with pytest.raises(rel.ReliabilityError):
        rel.checkpoint_for(1.5, 8, RSC1, 8, timedelta(0))


def test_measured_rate_needs_node_days():
    assert rel.rate_per_1000(3, 0) is None
    assert rel.rate_per_1000(13, 2000) == pytest.approx(6.5)

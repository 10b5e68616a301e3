"""gpu-burn parser on the real captures (tests/fixtures/samples/index.tsv)."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.gpu_burn import parse_gpu_burn


def test_a100_ok(sample):
    r = parse_gpu_burn(sample("gpu_burn_8xa100_ok.txt"))
    assert r.tested == 8 and r.summary_complete
    assert [g.status for g in r.gpus] == ["OK"] * 8
    assert r.init_errors == () and not r.any_died
    assert r.last_percent == 100.0
    g0 = r.gpus[0]
    assert (g0.name, g0.uuid) == ("NVIDIA A100-SXM4-80GB", "GPU-b876c63f-396c-f826-5cd0-6b8409990352")
    assert (g0.iterations, g0.gflops, g0.max_gflops) == (6783, 16942.0, 17039.0)
    assert g0.errors == 0 and not g0.warning
    assert r.gpus[1].max_gflops == 17177.0
    assert all(g.gflops > 16000 for g in r.gpus)  # DOUBLES + tensor cores on A100: ~17 TFLOP/s
    assert r.progress_samples > 8  # '\r'-separated redraws counted one by one


def test_faulty_with_exit_zero(sample):
    r = parse_gpu_burn(sample("gpu_burn_16gpu_faulty_warning_exit0.txt"))
    assert r.tested == 16 and len(r.gpus) == 16
    assert {g.status for g in r.gpus} == {"FAULTY"}
    warned = [g.index for g in r.gpus if g.warning]
    assert warned == [1, 2, 3, 4, 9, 11, 14]
    assert r.gpus[1].errors == -524288000
    assert (r.gpus[0].iterations, r.gpus[0].gflops) == (18000, 6311.0)


def test_died_no_clients_alive(sample):
    r = parse_gpu_burn(sample("gpu_burn_8gpu_died_no_clients_alive.txt"))
    assert r.no_clients_alive and r.any_died
    assert r.tested is None and not r.summary_complete
    assert len(r.gpus) == 8 and all(g.died and g.iterations == -1 for g in r.gpus)
    assert [g.temperature_c for g in r.gpus] == [30, 30, 30, 30, 29, 31, 30, 30]
    assert r.last_percent == 30.0


def test_init_error_but_summary_ok(sample):
    r = parse_gpu_burn(sample("gpu_burn_8xv100_init_error_but_reports_ok_partial.txt"))
    assert r.init_errors == ("Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN",)
    assert r.tested == 8 and not r.summary_complete  # excerpt ends at 'GPU 4:'
    assert [g.status for g in r.gpus] == ["OK"] * 4 + [None] * 4
    assert all(g.iterations == 0 and g.gflops == 0.0 for g in r.gpus)
    assert r.gpus[2].max_temperature_c == 45
    assert r.gpus[7].name == "Tesla V100-SXM2-32GB"


def test_not_gpu_burn():
    with pytest.raises(ParseError):
        parse_gpu_burn("Segmentation fault (core dumped)\n")

"""The health state on the node: the Prometheus textfile (exposition format) and the cursor file."""

from __future__ import annotations

from burnin.service.state import read_cursor, render_metrics, write_cursor


def test_metrics_are_one_gauge_per_check_and_verdict_with_escaped_labels():
    report = {
        "node": 'odd"name\\',
        "verdict": "FAIL",
        "drain": True,
        "wall_s": 0.4,
        "finished_at_unix": 1764000000.5,
        "checks": [{"check": "gpu_inventory", "verdict": "FAIL", "wall_s": 0.1}],
    }
    text = render_metrics(report)
    assert (
        'bringup_health_check_verdict{node="odd\\"name\\\\",check="gpu_inventory",verdict="FAIL"} 1' in text
    )
    assert (
        'bringup_health_check_verdict{node="odd\\"name\\\\",check="gpu_inventory",verdict="PASS"} 0' in text
    )
    assert 'bringup_health_drain{node="odd\\"name\\\\"} 1' in text
    assert "bringup_health_last_run_timestamp_seconds" in text and text.endswith("\n")
    for line in text.splitlines():  # every sample line: name{labels} value
        assert line.startswith("# ") or line.rsplit(" ", 1)[1].replace(".", "").isdigit()


def test_the_cursor_round_trips_and_a_broken_one_is_none(tmp_path):
    assert read_cursor(tmp_path) is None
    write_cursor(tmp_path, "2025-01-17T15:36:26,128279+00:00")
    assert read_cursor(tmp_path) == "2025-01-17T15:36:26,128279+00:00"
    (tmp_path / "cursor.json").write_text("{not json")
    assert read_cursor(tmp_path) is None  # every line judged again, never fewer

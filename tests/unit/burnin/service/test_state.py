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
    cursor = {"version": 2, "boot_id": "1d8c0a4e", "last": [[74, "ab12"], [0, "cd34"]]}
    write_cursor(tmp_path, cursor)
    assert read_cursor(tmp_path) == cursor
    (tmp_path / "cursor.json").write_text("{not json")
    assert read_cursor(tmp_path) is None  # every line judged again, never fewer
    (tmp_path / "cursor.json").write_text('["a list"]\n')
    assert read_cursor(tmp_path) is None


def test_an_older_versions_cursor_file_is_still_read(tmp_path):
    """What an older version wrote (the ISO stamp of the last line) reads as it is: the judging
    half sees it is a time stamp, resets, and says so (tests/unit/burnin/service/test_health.py)."""
    (tmp_path / "cursor.json").write_text('{"kernel_log": "2025-01-17T15:36:26,128279+00:00"}\n')
    assert read_cursor(tmp_path) == {"kernel_log": "2025-01-17T15:36:26,128279+00:00"}

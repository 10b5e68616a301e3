"""A stand-in for the ib stage's ``run_round`` (burnin/stages/ib.py) in the stage tests: every
session of a round reports the bandwidth the test gives it, as perftest's ``--out_json`` on both
ends, and no port counter moves."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from burnin.checks.ib_load import EndOutput, counter_changes
from burnin.stages import ib as ib_stage


def fake_run_round(bandwidth: Callable[[Any, Any], float]):
    """A ``run_round`` whose session ``s`` of round ``r`` reports ``bandwidth(r, s)`` (perftest's
    BW_average: Gb/s, both directions of a bidirectional run)."""

    def run_round(round_, targets, infos, seconds, out_json, bound=None, on_wave=None):
        got = ib_stage.RoundOutputs()
        for s in round_.sessions:
            doc = {
                "test_info": {"test": "x"},
                "results": {"MsgSize": 65536, "n_iterations": 1, "BW_average": bandwidth(round_, s)},
            }
            for node in (s.server, s.client):
                got.ends[(node, s)] = EndOutput(json=json.dumps(doc), rc=0)
        for key in round_.loaded:
            got.changes[key] = counter_changes({}, {})
        return got

    return run_round

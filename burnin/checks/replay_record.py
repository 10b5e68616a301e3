"""The record a multi-node stage appends to a node's evidence so its results can be judged again.

One marker line (``@@burnin-<stage>-record v1``), then the record as one line of compact JSON,
at the end of the evidence. Written and read here for the ib and nccl stages alike
(``ib_replay``, ``nccl_replay``); a record that is missing, cut by the evidence cap or lacking
its keys is a ParseError, so a re-judge says why it cannot, never passes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from burnin.parsers import ParseError


def record_text(mark: str, doc: Mapping[str, Any]) -> str:
    return f"{mark}\n{json.dumps(doc, separators=(',', ':'))}\n"


def parse_record(evidence: str, mark: str, missing: str, keys: Mapping[str, type]) -> dict[str, Any]:
    """The record after the last ``mark`` line. ``missing`` says why a record may be absent;
    ``keys`` maps each key the record must hold to its type (``object`` for any)."""
    at = evidence.rfind(mark + "\n")
    if at < 0:
        raise ParseError(missing)
    line = evidence[at + len(mark) + 1 :].split("\n", 1)[0]
    what = mark.split()[0].lstrip("@").removeprefix("burnin-").replace("-", " ")
    try:
        doc = json.loads(line)
    except ValueError as exc:
        raise ParseError(f"the {what} is not whole JSON ({exc}): the evidence was cut") from None
    if not isinstance(doc, dict) or any(k not in doc or not isinstance(doc[k], t) for k, t in keys.items()):
        raise ParseError(f"the {what} lacks its {_names(list(keys))}")
    return doc


def _names(keys: Sequence[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " or " + keys[-1]

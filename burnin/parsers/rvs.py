"""The ROCm Validation Suite's console output (`rvs -c CONF`), pure.

RVS runs the actions of a configuration file one after another; each starts with
``[RESULT] [ts] Action name :NAME`` and ``Module name :MODULE``, and logs ``[RESULT] [ts] [NAME] ...``
lines (the layouts of https://github.com/ROCm/ROCmValidationSuite/blob/master/docs/ug1main.md):

- gst (GEMM stress): ``[NAME] [GPU:: ID] GFLOPS X Target GFLOPS: T met: TRUE|FALSE`` per GPU at its end;
- iet (power stress): ``[NAME] [GPU:: ID] pass: TRUE|FALSE`` per GPU at its end;
- pbqt (peer to peer, XGMI): ``p2p [GPU:: N - ID - BDF] [GPU:: N - ID - BDF] peers:true|false ...``,
  then ``p2p-bandwidth[k/n] ... X GBps``;
- pebb (PCIe host<->device): ``pcie-bandwidth [k/n] [CPU:: C] [GPU:: N - ID - BDF] ... X GBps``;
- babel (HBM): a table of MB/s per GPU id and function.

Since RVS 1.6 the run ends with a summary box: the system (RVS and ROCm versions, the GPU count), each
GPU as ``MODEL - ID`` over ``INDEX - NODE - BDF``, and ``| ACTION | MODULE | PASS|FAIL |`` per action.
GPUs are named by their KFD gpu_id (42583); the summary maps it to the GPU's index and BDF.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from burnin.parsers._common import parser, split_lines
from burnin.parsers.errors import ParseError

_PREFIX = re.compile(r"^\[(?P<level>[A-Z]+)\s*\]\s*\[\s*[\d.]+\s*\]\s?")
_ACTION = re.compile(r"^Action name :\s*(?P<name>\S+)\s*$")
_MODULE = re.compile(r"^Module name :\s*(?P<module>\S+)\s*$")
_GST = re.compile(
    r"^\[(?P<action>[^\]]+)\] \[GPU::\s*(?P<gpu>\d+)\] GFLOPS (?P<gflops>[\d.]+) "
    r"Target GFLOPS: (?P<target>[\d.]+) met: (?P<met>TRUE|FALSE)\s*$"
)
_PASS = re.compile(r"^\[(?P<action>[^\]]+)\] \[GPU::\s*(?P<gpu>\d+)\] pass: (?P<ok>TRUE|FALSE)\s*$")
_GPU = r"\[GPU::\s*(?P<{0}>\d+)\s*-\s*(?P<{0}_id>\d+)\s*-\s*(?P<{0}_bdf>[0-9a-fA-F:.]+)\]"
_PEERS = re.compile(
    rf"^\[(?P<action>[^\]]+)\] p2p {_GPU.format('a')} {_GPU.format('b')} peers:(?P<peers>true|false)\b"
)
_BANDWIDTH = re.compile(
    r"^\[(?P<action>[^\]]+)\] (?:p2p|pcie)-bandwidth\s*\[[\d/ ]+\] .*?\s(?P<gbps>[\d.]+) GBps\b"
)
_BORDER = re.compile(r"^\+-+\+$")
_BOX_ROW = re.compile(r"^\|(.*)\|\s*$")
_SUMMARY_GPU = re.compile(r"^(?P<model>.+?) - (?P<id>\d+)$")
_SUMMARY_PLACE = re.compile(r"^(?P<index>\d+) - (?P<node>\d+) - (?P<bdf>[0-9a-fA-F:.]+)$")


@dataclass
class RvsAction:
    name: str
    module: str = ""
    met: dict[int, bool] = field(default_factory=dict)  # gpu_id -> gst met / iet pass
    gflops: dict[int, tuple[float, float]] = field(default_factory=dict)  # gpu_id -> (max, target)
    no_peers: list[tuple[int, int]] = field(default_factory=list)  # pbqt pairs RVS found no peer access for
    bandwidths: int = 0  # pbqt/pebb bandwidth lines
    result: str | None = None  # the summary's PASS/FAIL


@dataclass(frozen=True)
class RvsGpu:
    gpu_id: int
    index: int
    bdf: str
    model: str


@dataclass
class RvsRun:
    actions: list[RvsAction]
    gpus: dict[int, RvsGpu]  # gpu_id -> the summary's GPU
    gpu_count: int | None  # the summary's 'GPUs' line
    version: str | None
    summary: bool  # the summary's action table was seen, closed by its border: the run reached its end
    errors: list[str]

    def name(self, gpu_id: int) -> str:
        """'GPU 3 (0000:75:00.0)', or 'GPU id 17010' for a GPU the summary does not place."""
        gpu = self.gpus.get(gpu_id)
        return f"GPU {gpu.index} ({gpu.bdf})" if gpu else f"GPU id {gpu_id}"

    def subject(self, gpu_id: int) -> str:
        gpu = self.gpus.get(gpu_id)
        return f"GPU {gpu.index}" if gpu else f"GPU id {gpu_id}"


def _cells(line: str) -> list[str] | None:
    m = _BOX_ROW.match(line.strip())
    return [c.strip() for c in m[1].split("|")] if m else None


@parser
def parse_rvs(text: str) -> RvsRun:
    """One `rvs -c CONF` run. Lines of other kinds (ramp up, power samples, babel's table) are
    skipped; a run that never names an action is refused (RVS did not start its tests)."""
    actions: list[RvsAction] = []
    by_name: dict[str, RvsAction] = {}
    gpus: dict[int, RvsGpu] = {}
    errors: list[str] = []
    gpu_count = version = None
    in_results = summary = False
    rows = 0  # result rows of the summary seen
    pending: list[tuple[str, int]] = []  # the summary's last 'MODEL - ID' cells, placed by the next row
    for line in split_lines(text):
        if (m := _PREFIX.match(line)) is None:
            if in_results and rows and _BORDER.match(line.strip()):
                summary = True  # the whole border under a result row: the table (and the run) ended
            cells = _cells(line)
            if cells is None:
                continue
            if cells[:3] == ["Action Name", "Module", "Result"]:
                in_results, rows = True, 0
            elif in_results and len(cells) == 3 and cells[2] in ("PASS", "FAIL"):
                summary, rows = False, rows + 1  # another row: its own border must follow
                action = by_name.get(cells[0]) or _new(actions, by_name, cells[0])
                action.module = action.module or cells[1].lower()
                action.result = cells[2]
            elif len(cells) == 2 and cells[0] == "GPUs" and cells[1].isdigit():
                gpu_count = int(cells[1])
            elif len(cells) == 2 and cells[0] == "RVS version":
                version = cells[1]
            elif all(_SUMMARY_GPU.match(c) for c in cells if c) and any(cells):
                pending = [(g["model"], int(g["id"])) for c in cells if c and (g := _SUMMARY_GPU.match(c))]
            elif pending and all(_SUMMARY_PLACE.match(c) for c in cells if c):
                places = [p for c in cells if c and (p := _SUMMARY_PLACE.match(c))]
                for (model, gpu_id), place in zip(pending, places, strict=False):
                    gpus[gpu_id] = RvsGpu(gpu_id, int(place["index"]), place["bdf"].lower(), model)
                pending = []
            continue
        level, body = m["level"], line[m.end() :].strip()
        if level == "ERROR":
            errors.append(body[:200])
            continue
        if am := _ACTION.match(body):
            _new(actions, by_name, am["name"])
        elif (mm := _MODULE.match(body)) and actions:
            actions[-1].module = mm["module"].lower()
        elif g := _GST.match(body):
            action = by_name.get(g["action"]) or _new(actions, by_name, g["action"])
            action.met[int(g["gpu"])] = g["met"] == "TRUE"
            action.gflops[int(g["gpu"])] = (float(g["gflops"]), float(g["target"]))
        elif p := _PASS.match(body):
            action = by_name.get(p["action"]) or _new(actions, by_name, p["action"])
            action.met[int(p["gpu"])] = p["ok"] == "TRUE"
        elif q := _PEERS.match(body):
            action = by_name.get(q["action"]) or _new(actions, by_name, q["action"])
            if q["peers"] == "false":
                action.no_peers.append((int(q["a_id"]), int(q["b_id"])))
        elif b := _BANDWIDTH.match(body):
            action = by_name.get(b["action"]) or _new(actions, by_name, b["action"])
            action.bandwidths += 1
    if not actions:
        raise ParseError("rvs: no 'Action name :' line: RVS ran no test")
    return RvsRun(actions, gpus, gpu_count, version, summary, errors)


def _new(actions: list[RvsAction], by_name: dict[str, RvsAction], name: str) -> RvsAction:
    action = RvsAction(name)
    actions.append(action)
    by_name[name] = action
    return action

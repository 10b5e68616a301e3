"""The InfiniBand and fabric tools `burnin evaluate` knows (pure): the lines each prints,
weighted as in burnin/evaluate/markers.py, which lists them among the others."""

from __future__ import annotations

import re

from burnin.evaluate.tool_marks import Tool, mark

FABRIC_TOOLS: tuple[Tool, ...] = (
    Tool(
        "ibstat",
        (
            mark(r"^CA '[^']+'\s*$", 3, "\"CA 'mlx5_N'\" lines"),
            mark(r"^\s+CA type:", 2, "'CA type:'"),
            mark(r"^\s+Physical state:\s", 2, "'Physical state:'"),
        ),
    ),
    Tool(
        "ibstatus",
        (
            mark(r"^Infiniband device '[^']+' port \d+ status:", 3, "'Infiniband device ... status:' lines"),
            mark(r"^\s+phys state:\s+\d:", 2, "'phys state: N:'"),
        ),
        instead="the ib_ports check reads `ibstat`",
    ),
    Tool(
        "ibv_devinfo",
        (
            mark(r"^hca_id:\s", 3, "'hca_id:' lines"),
            mark(r"^\s+state:\s+PORT_\w+", 2, "'state: PORT_...'"),
        ),
        instead="the ib_ports check reads `ibstat`",
    ),
    Tool(
        "UFM event log",
        (
            # event.log lines: 'TIME [entry] [event number] LEVEL [category] OBJECT [...]' (docs/fabric.md)
            mark(
                r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[\d+\] \[\d+\] (?:INFO|WARNING|MINOR|MAJOR|CRITICAL) \[\w+\]",
                3,
                "'TIME [entry] [event] LEVEL [category]' lines",
            ),
            mark(
                r"\] (?:IBPort|Switch|Site|Computer|Link) \[default\b", 3, "'IBPort [default / ...' objects"
            ),
        ),
        instead="`burnin fabric ufm-events` reads the fabric's event log (docs/fabric.md); no node check judges it",
    ),
    Tool(
        "ibnetdiscover -p",
        (mark(r"^(?:CA|SW)\s+\d+\s+\d+\s+0x[0-9a-f]{16}\s+\d+x\s", 3, "'CA/SW lid port guid 4x ...' rows"),),
        instead="the ib stage reads the fabric map; no check judges it alone",
    ),
    Tool(
        "sysfs /sys/class/infiniband",
        (
            mark(
                r"^\w+/ports/\d+/(?:counters/\w+|state|phys_state|rate):\s",
                3,
                "'mlx5_N/ports/1/...' file dumps",
            ),
        ),
        instead="the ib_ports check reads `ibstat`; counters are judged from `perfquery -x`",
    ),
    Tool(
        "mlxlink",
        (
            mark(r"^Operational Info\s*\n-{8,}\s*$", 3, "the 'Operational Info' block"),
            mark(r"^Troubleshooting Info\s*\n-{8,}\s*$", 3, "the 'Troubleshooting Info' block"),
            mark(r"^Recommendation\s+: ", 2, "'Recommendation :'"),
        ),
        instead="the ib_ports check reads `ibstat`; counters are judged from `perfquery -x`",
    ),
    Tool(
        "ib_write_bw / ib_read_bw (perftest)",
        (
            mark(r"^\s{2,}\S.*(?:BW|Latency) Test\s*$", 3, "a perftest title ('RDMA_Write BW Test')"),
            mark(r"#bytes\s+#iterations\s+(?:BW peak|t_min)", 3, "the '#bytes #iterations' table header"),
            mark(r"^\s*(?:local|remote) address:\s*LID", 2, "'local address: LID' lines"),
            mark(r"Waiting for client to connect", 2, "the server's wait banner"),
            mark(
                r"^\s*(?:Couldn't connect to \S+:\d+|Unable to create QP|Failed to create QP|Couldn't create IB "
                r"resources|Completion with error at|Port number \d+ state is|IB device \S+ not found)",
                2,
                "a perftest error line",
            ),
            mark(r'"test_info"\s*:', 3, "the --out_json 'test_info' object"),
            mark(r'"BW_average"\s*:', 2, "'BW_average'"),
        ),
    ),
    Tool(
        "perfquery",
        (
            mark(
                r"^#\s*[\w ]*counters:\s*Lid\s+\d+\s+port\s+(?:\d+|all)",
                3,
                "'# Port counters: Lid N port N'",
                re.I,
            ),
            mark(
                r"^(?:PortXmitData|PortRcvData|SymbolErrorCounter|PortSelect):\.{3,}",
                2,
                "'Counter:.....N' lines",
            ),
        ),
    ),
    # ---- NCCL ---------------------------------------------------------------------------------
)

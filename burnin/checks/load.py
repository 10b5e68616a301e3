"""How a check puts the GPUs under load on a node: the burnin-stress program.

Nodes configured by this project have the ``burnin-stress`` console script; any other node gets
the same program's source on stdin (``python3 -``), so a stock node with torch or CuPy can be
burnt in too. Without either, burnin-stress reports an error and the check says UNKNOWN.
"""

from __future__ import annotations

from functools import lru_cache

from burnin import onnode

_DELIMITER = "BURNIN_STRESS_SOURCE"


@lru_cache(maxsize=1)
def _stress_source() -> str:
    source = onnode.source("stress")
    if _DELIMITER in source:
        raise RuntimeError("burnin/onnode/stress.py must not contain its own heredoc delimiter")
    return source


def stress_shell(seconds: float, extra: str = "") -> str:
    """Bash that runs the stress load for ``seconds`` and prints its JSON report."""
    args = f"--seconds {seconds:g} --json {extra}".strip()
    return (
        "if command -v burnin-stress >/dev/null 2>&1; then\n"
        f"  burnin-stress {args}\n"
        "else\n"
        f"  python3 - {args} <<'{_DELIMITER}'\n{_stress_source()}{_DELIMITER}\n"
        "fi"
    )

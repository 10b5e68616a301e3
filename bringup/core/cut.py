"""How an output over its cap is cut and said (pure): sizes as the markers write them, the line
put where the middle was dropped, and the one line a finding says about it. The buffer that
cuts is bringup/local/capture.py; the store caps evidence the same way (bringup/fleet/evidence.py).
"""

from __future__ import annotations

MIB = 1024 * 1024


def mb(size: int) -> str:
    """A byte count as the cut markers and findings write it: '100.0 MB' (MiB, one decimal)."""
    return f"{size / MIB:.1f} MB"


def cut_marker(total: int, dropped: int) -> str:
    """The line put where an output was cut: how much was kept and how much was not."""
    return (
        f"\n[... output cut at {mb(total - dropped)}: {mb(dropped)} of {mb(total)} "
        f"not kept, the head and the tail are ...]\n"
    )


def cut_note(total: int, dropped: int, what: str = "output") -> str:
    """The one line a finding or an error says about a cut: 'output cut at 16.0 MB: ...'."""
    return f"{what} cut at {mb(total - dropped)}: {mb(total)} printed, {mb(dropped)} in its middle not kept"

"""Where a test on the host's own network may listen on a fixed TCP port.

The host's ports are shared by every test of a run and every lab it brings up:
- 21000-28999: the labs' slurmctld and slurmd (bringup/lab/ports.py);
- 29000-32759: the labs' MariaDB and slurmdbd (the same);
- 32768-60999: the kernel's ephemeral range, where any outgoing connection may hold a port.
A test server that listened in the first two once took a lab's slurmctld port ("port 25508 for
this lab's slurmctld is taken"; a lab now moves to the next free slot, but a port taken between
its choice and its daemon's start still fails it), and in the third an outgoing connection can
take the test's.
"""

from __future__ import annotations

import random

FREE = range(61000, 65000)  # above all three


def random_base_port(span: int = 200) -> int:
    """A base port with ``span`` ports after it inside FREE."""
    return random.randrange(FREE.start, FREE.stop - span)

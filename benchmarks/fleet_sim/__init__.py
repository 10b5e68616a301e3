"""Simulated fleets for controller benchmarks: many nodes served by one process.

``ssh``: N SSH endpoints that answer the burn-in stages' batch scripts with recorded outputs.
``redfish``: N Redfish BMCs (tests/doubles/redfish_server.py's vendor-shaped fakes) that count
the requests they are asked (benchmarks/discover.py).
Not the lab: nothing here runs the checks' tools per node, so 4,000 nodes fit on one machine
and what a benchmark measures is the controller, not the nodes.
"""

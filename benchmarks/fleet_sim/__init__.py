"""Simulated fleets for controller benchmarks (issue 18): many nodes served by one process.

``ssh``: N SSH endpoints that answer the burn-in stages' batch scripts with recorded outputs.
Not the lab: nothing here runs the checks' tools per node, so 4,000 nodes fit on one machine
and what a benchmark measures is the controller, not the nodes.
"""

"""Accepting a hardware delivery: the order (bringup/inventory/delivery.py) against what arrived.

``conformance`` compares, purely, what discovery and the checks found with the order, node by
node and part by part; the rest of the package (the acceptance run, the soak, the decisions,
the reports and the RMA bundles) is the orchestration ``burnin accept`` calls. docs/acceptance.md
describes the order file and a run.
"""

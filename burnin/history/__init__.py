"""The fleet's history read back: per-node signals, lemon nodes, fleet reliability figures.

``signals`` and ``reliability`` and ``lemons`` are pure (records in, figures out); ``read`` is the
thin edge that reads a rack's events and results over a window from the fleet store.
"""

"""burnin: judge GPU nodes (checks, stages, golden selection, reports)."""

__version__ = "0.1.0"

"""Provisioning: take discovered nodes to an installed OS (built-in PXE or MAAS)."""

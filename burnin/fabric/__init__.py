"""The InfiniBand fabric against its cabling plan (docs/fabric.md): the plan (``plan.py``: a CSV
or a rail-optimised fat-tree description, switches named by their place), P_Key tables
(``pkeys.py``) and the comparison with what ``ibnetdiscover -p`` saw (``verify.py``). Pure: files
are read here, nothing is run; ``burnin fabric verify`` runs ``ibnetdiscover``.
"""

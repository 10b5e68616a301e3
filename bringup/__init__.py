"""bringup: take a rack of GPU servers from bare metal to configured nodes.

Discovery (Redfish), provisioning (PXE or MAAS), configuration (Ansible) and the fleet
store that every step reads and writes. Judging hardware lives in the sibling package
``burnin``.
"""

__version__ = "0.1.0"

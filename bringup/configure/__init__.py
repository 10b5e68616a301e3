"""Configure nodes with Ansible: playbooks/site.yml through ansible-runner, outcomes onto records.

- ``inventory``: the Ansible inventory built from the fleet store and the rack inventory, with
  the node's hardware profile turned into role variables (pure);
- ``outcome``: ansible-runner events folded into one outcome per host (pure);
- ``runner``: one run of the playbook through ansible-runner's Python API;
- ``record``: which nodes may be configured, and the outcomes written onto their records.

The command line is ``bringup configure`` (bringup/cli/configure.py); docs/configure.md tells
the whole story.
"""

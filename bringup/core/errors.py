"""Errors a user can fix, as one family.

Every error that means "your input, your rack or your services are not right" derives from
``UserError``: a malformed inventory, an unknown node, a refused lifecycle move, a BMC that does
not answer, a lab that cannot start. The command lines catch ``UserError`` alone and print its
message on one line. Anything else that reaches them is a bug in this project: it is shown with
its traceback (``--debug``) or as one line that points to a log file holding it.

Subclasses keep the builtin base they had (``ValueError``, ``RuntimeError``) so code that
caught them by that base still does.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user can act on; its message says what and, where it can, how."""

    exit_code = 1  # README.md, "Exit codes"


class BadInput(UserError, ValueError):
    """A value given on the command line or in a file is not one this project accepts."""


class GateRefusal(UserError):
    """The state gate admitted none of the nodes: the step did nothing (each node's row says why)."""

    exit_code = 4

"""The one error every parser raises: text that is not the tool's output, or a parser bug."""

from __future__ import annotations


class ParseError(ValueError):
    """The text is not the expected tool output, or is too broken to trust.

    ``internal`` is True when the parser itself failed (a bug caught by the safety net);
    such errors should never happen and are asserted against in the tests.
    """

    def __init__(self, message: str, *, internal: bool = False) -> None:
        super().__init__(message)
        self.internal = internal

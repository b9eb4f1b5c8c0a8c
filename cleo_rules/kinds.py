"""Names used across the project, each defined once, importable without any extra.

Values are the strings that results, traces and JSON carry, so a
:class:`Source` compares equal to its value (``Source.CONVERSATION ==
"conversation"``).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Source"]


class Source(StrEnum):
    """Where a stored piece comes from: a past conversation or a document."""

    CONVERSATION = "conversation"
    DOCUMENT = "document"

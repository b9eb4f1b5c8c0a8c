"""cleo-rules: decide, before retrieval, what to search for on each user turn.

    >>> from cleo_rules import load_pack
    >>> pack = load_pack()
    >>> d = pack.classify("Yes, go with the second one.", history=["Compare the two van insurance quotes"])
    >>> d.kind, d.query
    ('follow_up', 'Compare the two van insurance quotes\\nYes, go with the second one.')
"""

from typing import TYPE_CHECKING

from .errors import CleoError, PackError, Problem

if TYPE_CHECKING:  # imported lazily at run time (see __getattr__), seen eagerly by type checkers
    from .decision import Decision
    from .pack.compile import Pack, load_pack
    from .runtime import PackManager

__all__ = ["load_pack", "Pack", "Decision", "PackManager", "CleoError", "PackError", "Problem"]


def __getattr__(name):  # keep `import cleo_rules` cheap
    if name in ("load_pack", "Pack"):
        from .pack import compile as _compile

        return getattr(_compile, name)
    if name == "PackManager":
        from .runtime import PackManager

        return PackManager
    if name == "Decision":
        from .decision import Decision

        return Decision
    raise AttributeError(name)

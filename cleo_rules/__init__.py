"""cleo-rules: decide, before retrieval, what to search for on each user turn.

    >>> from cleo_rules import load_pack
    >>> pack = load_pack()
    >>> d = pack.classify("Yes, go with the second one.", history=["Compare the two van insurance quotes"])
    >>> print(d.kind)
    follow_up
    >>> d.query
    'Compare the two van insurance quotes\\nYes, go with the second one.'
"""

from typing import TYPE_CHECKING

from .errors import CleoError, PackError, Problem

if TYPE_CHECKING:  # imported lazily at run time (see __getattr__), seen eagerly by type checkers
    from .decision import Decision
    from .pack.compile import load_pack
    from .pack.model import Pack
    from .runtime import PackManager

__all__ = ["load_pack", "Pack", "Decision", "PackManager", "CleoError", "PackError", "Problem"]


def __getattr__(name):  # keep `import cleo_rules` cheap
    if name == "load_pack":
        from .pack.compile import load_pack

        return load_pack
    if name == "Pack":
        from .pack.model import Pack

        return Pack
    if name == "PackManager":
        from .runtime import PackManager

        return PackManager
    if name == "Decision":
        from .decision import Decision

        return Decision
    raise AttributeError(name)

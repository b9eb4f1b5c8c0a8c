"""The files a pack is made of, read and checked, with every problem placed: below the rule families and the packs.

:mod:`.load` reads YAML with the position of every value (:class:`~.load.LoadedFile`, JSON
pointers, :func:`~.load.display` for paths in messages), long generated word lists by
:mod:`.flow`; :mod:`.validate` checks a file against a JSON Schema, reads a rule file's
``kind:`` and lints one pattern, judged before it is compiled by :mod:`.bounds` and for
catastrophic backtracking by :mod:`.backtracking`.

Both :mod:`cleo_rules.families` (each family reads and lints its own files) and
:mod:`cleo_rules.pack` (the manifest, the compiler, the cache), and the corpus, build on
this package; it imports none of them.
"""

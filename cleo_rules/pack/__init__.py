"""Rule packs: load (YAML with positions) -> validate (schema + lints) -> compile -> a :class:`~.model.Pack`.

:mod:`.load` reads the files, :mod:`.validate` and :mod:`.backtracking`
find what is wrong with them, :mod:`.compile` has each file read by its rule
family (:mod:`cleo_rules.families`) and builds the immutable
:class:`~.model.Pack` (:mod:`.model`), which keeps its sources and each
rule's pointer; :mod:`.examples` judges the pack's own examples against it;
:mod:`.cache` keeps compiled packs (as :mod:`.snapshot` writes them);
:mod:`.sources` finds packs and checks their versions; :mod:`.compose`
reads what a pack is built on (``extends:``, ``disable:``) and which rule of
which pack the compiler builds.
"""

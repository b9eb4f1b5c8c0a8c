"""Rule packs: files read and checked (:mod:`cleo_rules.reading`) -> compiled -> a :class:`~.model.Pack`.

:mod:`cleo_rules.reading` reads the files (YAML with positions) and finds
what is wrong with them (schemas, pattern lints), below both this package
and the rule families; :mod:`.compile` has each file read by its rule
family (:mod:`cleo_rules.families`) and builds the immutable
:class:`~.model.Pack` (:mod:`.model`), which keeps its sources and each
rule's pointer; :mod:`.examples` judges the pack's own examples against it;
:mod:`.cache` keeps compiled packs (as :mod:`.snapshot` writes them);
:mod:`.sources` finds packs and checks their versions; :mod:`.compose`
reads what a pack is built on (``extends:``, ``disable:``) and which rule of
which pack the compiler builds.
"""

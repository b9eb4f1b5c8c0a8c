"""The generated corpus: every rule asserted in both directions.

``generate`` expands the templates in a pack's ``generate:`` blocks (and the
cross-rule templates of its slots file) into cases; ``build_corpus`` writes
them to ``corpus/generated/``; ``run_corpus`` runs the checked-in corpus
(generated and hand-written) against a pack and reports per rule; ``diff_packs``
lists every case whose kind or query changes between two packs.

Modules: :mod:`.model` (cases), :mod:`.template` (the template grammar),
:mod:`.generate` (expansion), :mod:`.files` (reading and writing corpus
files), :mod:`.build` (writing ``generated/``), :mod:`.judge` (one case
against one decision), :mod:`.run` (the whole corpus, counted per rule),
:mod:`.report` (its result), :mod:`.diff` (two packs compared).
"""

from .build import build_corpus
from .diff import diff_packs
from .files import corpus_dir_of, default_corpus_dir
from .generate import GENERATOR_VERSION, generate
from .model import Case, CorpusError
from .report import Report
from .run import run_corpus

__all__ = ["Case", "CorpusError", "Report", "build_corpus", "corpus_dir_of", "default_corpus_dir", "diff_packs",
           "generate", "GENERATOR_VERSION", "run_corpus"]

"""The generated corpus: every rule asserted in both directions.

``generate`` expands the templates in a pack's ``generate:`` blocks (and the
cross-rule templates of its slots file) into cases; ``build_corpus`` writes
them to ``corpus/generated/``; ``check_corpus`` runs the checked-in corpus
(generated and hand-written) against a pack and reports per rule; ``diff_packs``
lists every case whose kind or query changes between two packs.
"""

from typing import TYPE_CHECKING

from .generate import GENERATOR_VERSION, build_corpus, generate
from .model import Case, CorpusError
from .run import Report, check_corpus, default_corpus_dir

if TYPE_CHECKING:  # imported on first use (see __getattr__)
    from .diff import diff_packs

__all__ = ["Case", "CorpusError", "Report", "build_corpus", "check_corpus", "default_corpus_dir", "diff_packs",
           "generate", "GENERATOR_VERSION"]


def __getattr__(name):
    if name == "diff_packs":
        from .diff import diff_packs

        return diff_packs
    raise AttributeError(name)

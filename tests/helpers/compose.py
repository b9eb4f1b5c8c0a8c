"""The team pack of issue 24 (it extends cleo-en, disables one rule, changes a setting and adds a correction), as
the composition tests and the playground's browser tests build it."""

from __future__ import annotations

from pathlib import Path

from cleo_rules.corpus import build_corpus
from cleo_rules.pack.compile import compile_pack

HISTORY = ["Compare the two van insurance quotes"]
#: twelve words, every one in cleo-en's vocabulary: a follow-up, unless the pack takes at most eleven
TWELVE = "Yes, great, thanks a lot, sounds perfect, thank you so very much."

TEAM = """\
pack: team
version: 0.1.0
locale: en
extends: [{pack: cleo-en, version: ">=1.0,<2"}]
disable: [correction.change-of-mind]
settings:
  max_follow_up_words: 11
files: [corrections.yaml]
"""

OUT_OF_STOCK = r"""kind: corrections
rules:
  - id: correction.out-of-stock
    description: The user reports that what was offered is out of stock.
    pattern: '\b(?:that|this|it)(?: one)? (?:is|was|went) out of stock\b'
    examples:
      - "That one is out of stock."
      - "It went out of stock yesterday."
    counterexamples:
      - "Which suppliers have the blue van tyres out of stock this week?"
    request_forms:
      - "Show me the second one, please."
    generate:
      positive:
        - "{That|This|It}{| one} {is|was} out of stock{| already| again}{.|!}"
      negative:
        - "Which {suppliers|shops} have the {blue|winter} tyres out of stock {this week|today}?"
      request:
        - "{Show me|Try} the {first|second} one{|, please}."
"""


def write_team(root: Path) -> Path:
    """The team pack of the issue, with its corpus built: ``root/rules`` (returned) and ``root/corpus``."""
    (root / "rules").mkdir(parents=True)
    (root / "corpus").mkdir()
    (root / "rules" / "pack.yaml").write_text(TEAM, encoding="utf-8")
    (root / "rules" / "corrections.yaml").write_text(OUT_OF_STOCK, encoding="utf-8")
    (root / "corpus" / "regressions.yaml").write_text("kind: corpus\ncases: []\n", encoding="utf-8")
    build_corpus(compile_pack(root / "rules"), root / "corpus")
    return root / "rules"

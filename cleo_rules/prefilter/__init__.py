"""The prefilter: which rules can match a text, before any of them is searched.

Every pattern has *requirements* (:func:`literal_requirements`, in
:mod:`.requirements`): conditions that each text it matches satisfies, such
as "contains one of *that*, *this*, *those*, *these*" or "starts with one of
*and*, *so*, *or*". A rule whose requirements a text fails cannot match it,
and is not searched. :class:`LiteralIndex` (in :mod:`.scan`) finds, with one
scan of the text, the rules whose requirements it meets.

The matcher (:class:`cleo_rules.matcher.Matcher`) builds one index per pack.
"""

from .scan import LiteralIndex, holds, words_of, words_of_tokens
from .requirements import Condition, first_ascii_chars, literal_requirements

__all__ = ["Condition", "LiteralIndex", "first_ascii_chars", "holds", "literal_requirements", "words_of",
           "words_of_tokens"]

"""Judge one corpus case: the decision the pack makes on it, against what the case expects.

A case passes when it gets its expected kind, its ``rule`` fires, none of its
``not`` rules fires, its referent (when it names one) is the one found (the
option it names, or that option's phrase in the reply), and (with a history) its
query is shaped right: a follow-up combined with its anchor, or in a task
conversation with the things the anchor names beside the referent found (the
subject stays: a referent qualifies it), anything else searched as typed. Rules are the classification rules and the
referent rules; a referent rule "fires" on a case when it is the rule that
found the decision's referent (:attr:`Decision.parts`, the referent part's
``rule``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..kinds import DecisionKind
from ..shaping import fill_template, template_for
from ..incremental import Memo
from .model import Case, plain_item, role_tagged, user_turns

if TYPE_CHECKING:
    from ..decision import Decision

__all__ = ["Evaluator", "Outcome", "decision_key", "found_referent"]


@dataclass(frozen=True)
class Outcome:
    """One case run: the decision and why it failed (empty ``reasons``: it passed)."""

    case: Case
    kind: str
    rule: str | None
    matched: str | None
    query: str | None
    anchor: str | None
    reasons: tuple[str, ...] = ()
    culprit: str | None = None  # the rule that fired where it must not
    referent: str | None = None        # the referent part searched, if any
    referent_rule: str | None = None   # the referent rule that found it (None: none did)

    @property
    def ok(self) -> bool:
        return not self.reasons

    def got(self) -> str:
        text = f"got {self.kind}"
        if self.rule:
            text += f" by {self.rule}"
            if self.matched is not None:
                text += f" on {json.dumps(self.matched, ensure_ascii=False)}"
        elif self.kind not in ("skip",):
            text += " (no rule fired)"
        return text

    def expected(self) -> str:
        c = self.case
        text = f"expected {c.expect or 'any kind'}" + (f" but {c.not_kind}" if c.not_kind and not c.expect else "")
        if c.rule:
            text += f" by {c.rule}"
        if c.has_referent:
            text += (f", referent {json.dumps(c.referent, ensure_ascii=False)}" if c.referent is not None
                     else ", no referent" + (f" by {', '.join(_referent_nots(c))}" if _referent_nots(c) else ""))
        return text

    def got_referent(self) -> str:
        if self.referent_rule:
            return f"referent {json.dumps(self.referent, ensure_ascii=False)} by {self.referent_rule}"
        return "no referent found" if self.referent is None else \
            f"no referent found (the reply excerpt {json.dumps(self.referent, ensure_ascii=False)})"

    def to_dict(self, label: str | None = None) -> dict:
        c = self.case
        d = {"id": c.id, "message": c.message, "source": c.source,
             "file": c.file, "line": c.line if c.file else None,
             "expected": {"kind": c.expect, "rule": c.rule, "not": list(c.not_rules),
                          **({"not_kind": c.not_kind} if c.not_kind else {})},
             "got": {"kind": self.kind, "rule": self.rule, "matched": self.matched, "query": self.query,
                     "anchor": self.anchor, "referent": self.referent, "referent_rule": self.referent_rule},
             "reasons": list(self.reasons)}
        if c.has_referent:
            d["expected"]["referent"] = c.referent
        if c.history:
            d["history"] = [plain_item(h) for h in c.history]
        if label:
            d["type"] = label
        return d


#: rule fields that never change a decision: what a rule says of itself, where it is, what its corpus is made of
_NOT_DECIDING = frozenset({"description", "file", "line", "pointer", "generate", "compiled"})
_keys: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_keys_lock = threading.Lock()
#: decisions by :func:`decision_key`, message and history, and the cases judged by it and the case (by its
#: fields, and by the case itself); at most 200,000 decisions and 400,000 outcomes, least recently used dropped
_decided = Memo(200_000)
_judged = Memo(400_000)
_CASE_FIELDS = tuple(f.name for f in dataclasses.fields(Case) if f.name not in ("file", "line"))


def _rule_state(rule):
    if not dataclasses.is_dataclass(rule):
        return repr(rule)  # a rule of another shape: its repr (one with an address is never found again)
    return {f.name: getattr(rule, f.name) for f in dataclasses.fields(rule) if f.name not in _NOT_DECIDING}


def _plain(value):
    if isinstance(value, (frozenset, set)):
        return sorted(value, key=repr)
    if isinstance(value, (MappingProxyType, Mapping)):
        return dict(value)
    return repr(value)


def decision_key(pack) -> str:
    """A SHA-256 over everything a pack's decisions are made of (:func:`cleo_rules.families.build_matcher`): its
    settings, every rule of every family in order with every field but those that never decide
    (:data:`_NOT_DECIDING`: description, position, templates), the lexicon and the referent word lists. Two
    packs with the same key decide every message alike; the code is the process's own, so the key is never
    kept beyond it."""
    with _keys_lock:
        known = _keys.get(pack)
    if known is not None:
        return known
    parts = [dataclasses.asdict(pack.settings),
             [[str(kind), [_rule_state(r) for r in rules]] for kind, rules in pack.family_rules.items()],
             {name: sorted(words) for name, words in pack.lexicon.items()}, dict(pack.referent_words)]
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=_plain)
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    with _keys_lock:
        _keys[pack] = key
    return key


def _names_option(found: str | None, expected: str) -> bool:
    """Whether the referent ``found`` is the option ``expected`` names: the same text, or the option's phrase in the
    reply that starts with it ("Cresswell quotes 1,865 a year" for "Cresswell")."""
    return found is not None and (found == expected or found.startswith(expected + " "))


def _drawn_from(anchor: str, turn: str) -> bool:
    """Whether the anchor searched is the user's ``turn`` or the things it names, each said in it (the subject
    beside an option found in the reply: "Lisbon" of "Show me flights to Lisbon on Monday")."""
    return anchor == turn or all(name in turn for name in anchor.split())


def _referent_nots(case: Case) -> list[str]:
    return [r for r in case.not_rules if r.startswith("referent.")]


def found_referent(d) -> tuple[str | None, str | None]:
    """``(text, rule)`` of the decision's referent part: what the follow-up is searched with, and the
    referent rule that found it (``rule`` is None for the reply excerpt searched when no rule finds one)."""
    for part in d.parts:
        if part.name == "referent":
            return part.text, part.rule
    return None, None


class Evaluator:
    """Runs cases against one pack and says why each one fails."""

    def __init__(self, pack, kept=None):
        self.pack = pack
        self.kept = kept  # the decisions stored for the pack (a decisions_cache.Kept), or None
        self.referent_ids = frozenset(r.id for r in pack.referent_rules)
        self.rules = {r.id: r for r in pack.all_rules()}
        self.vocab_ids = frozenset(s.id for s in pack.vocab_sets)
        self.fillers = frozenset(s.id for s in pack.vocab_sets if s.role == "filler")
        self._key: str | None = None

    def fires(self, rule_id: str, kind: str, fired: str | None, referent_rule: str | None = None) -> bool:
        """Whether ``rule_id`` fired. A filler set never names a decision: it fires when any vocabulary set does;
        a referent rule fires when it found the referent (``referent_rule``)."""
        if rule_id in self.referent_ids:
            return referent_rule == rule_id
        if rule_id in self.fillers:
            return kind == "follow_up" and fired in self.vocab_ids
        return fired == rule_id

    def fired(self, rule_id: str, o: Outcome) -> bool:
        """Whether ``rule_id`` fired on the case of outcome ``o``."""
        return self.fires(rule_id, o.kind, o.rule, o.referent_rule)

    def run(self, case: Case) -> Outcome:
        """The case judged: remembered, as :meth:`decide` remembers decisions, by what decides it and every field
        of the case but where it is written (the outcome is then the same, of this very case)."""
        if self._key is None:
            self._key = decision_key(self.pack)
        same = _judged.get((self._key, id(case)))  # this very case (a corpus file read again shares its cases)
        if same is not None and same.case is case:
            return same
        key = (self._key, *(getattr(case, name) for name in _CASE_FIELDS))
        known = _judged.get(key)
        if known is not None:
            outcome = dataclasses.replace(known, case=case)
        else:
            d = self.decide(case.message, case.history)
            outcome = self.judge(case, d)
            if (d.note or "").startswith("timeout"):
                return outcome
            _judged.put(key, outcome)
        _judged.put((self._key, id(case)), outcome)  # the outcome holds the case: its id is not reused meanwhile
        return outcome

    def decide(self, message: str, history) -> Decision:
        """``pack.classify(message, history)``, remembered by what decides it (:func:`decision_key`): a pack
        edited in what does not change a decision (a description, a template, a case) decides again only the
        messages it has not decided before. With :attr:`kept`, a decision another process made and stored is read
        back (:mod:`.decisions_cache`), and every decision this evaluator gives is kept to be stored."""
        if self._key is None:
            self._key = decision_key(self.pack)
        said = json.dumps([plain_item(h) for h in history], ensure_ascii=False)
        key = (self._key, message, said)
        known = _decided.get(key)
        if known is None and self.kept is not None:
            known = self.kept.get(message, said)
            if known is not None:
                _decided.put(key, known)
        classified = known is None
        if classified:
            known = self.pack.classify(message, history)
            if (known.note or "").startswith("timeout"):  # a search that ran out of time is no decision to remember
                return known
            _decided.put(key, known)
        if self.kept is not None:
            self.kept.add(message, said, known, classified=classified)
        return known

    def judge(self, case: Case, d) -> Outcome:
        """How the decision ``d`` (for ``case``) measures up to the case's expectations."""
        reasons = []
        culprit = None
        ref_text, ref_rule = found_referent(d)
        if case.expect is not None and d.kind != case.expect:
            reasons.append(f"kind is {d.kind}, expected {case.expect}")
        if case.not_kind is not None and d.kind == case.not_kind:
            reasons.append(f"kind is {d.kind}, expected any kind but {case.not_kind}")
        if case.rule:
            if case.rule not in self.rules:
                reasons.append(f"rule {case.rule} is not in the pack")
            elif not self.fires(case.rule, d.kind, d.rule, ref_rule):
                reasons.append(f"{case.rule} did not fire")
        for nr in case.not_rules:
            if nr in self.rules and self.fires(nr, d.kind, d.rule, ref_rule):
                reasons.append(f"{nr} fired")
                culprit = (d.rule if d.rule else nr) if nr not in self.referent_ids else nr
        if case.has_referent:
            if case.referent is not None:
                if ref_rule is None or not _names_option(ref_text, case.referent):
                    reasons.append(f"referent is {json.dumps(ref_text if ref_rule else None, ensure_ascii=False)}, "
                                   f"expected {json.dumps(case.referent, ensure_ascii=False)}")
            elif ref_rule is not None and not _referent_nots(case):
                reasons.append(f"referent {json.dumps(ref_text, ensure_ascii=False)} found by {ref_rule}, "
                               f"expected none")
                culprit = culprit or ref_rule
        if case.query is not None:
            if d.query != case.query:
                reasons.append(f"query is {json.dumps(d.query, ensure_ascii=False)}, "
                               f"expected {json.dumps(case.query, ensure_ascii=False)}")
        elif case.history and (case.expect is None or d.kind == case.expect):
            reasons += self._shape(case, d)
        if reasons and culprit is None:
            kind_ok = case.expect is None or d.kind == case.expect
            if case.rule in self.referent_ids and kind_ok:
                culprit = ref_rule if ref_rule and ref_rule != case.rule else None  # another referent rule answered
            elif d.rule and d.rule != case.rule:
                culprit = d.rule
        return Outcome(case, d.kind, d.rule, d.matched, d.query, d.anchor, tuple(reasons), culprit,
                       ref_text, ref_rule)

    def _shape(self, case: Case, d) -> list[str]:
        expect = case.expect or d.kind
        if role_tagged(case.history):
            return self._shape_parts(case, d, expect)
        if expect == "follow_up":
            anchor = case.anchor if case.anchor is not None else case.history[-1]
            want = fill_template(self.pack.settings.combine, anchor=anchor, message=case.message)
            if d.query == want:
                return []
            if d.anchor is None:
                kinds = ", ".join(f"{json.dumps(h, ensure_ascii=False)} is {self.pack.kind_of(h)}"
                                  for h in case.history[-3:])
                return [f"query not combined: no earlier message was taken as substantive ({kinds})"]
            return [f"query combined with {json.dumps(d.anchor, ensure_ascii=False)}, "
                    f"expected {json.dumps(anchor, ensure_ascii=False)}"]
        if expect in ("correction", "substantive") and d.query != case.message:
            return [f"query is {json.dumps(d.query, ensure_ascii=False)}: a {expect} must be searched as typed"]
        return []

    def _correction(self, case: Case, d) -> list[str]:
        from ..history import read_history

        offer = self.pack.matcher.referents.offer(read_history(case.history))
        if offer is None:
            wanted = [case.message] + [fill_template(self.pack.settings.combine_correction, anchor=u, message=case.message)
                                       for u in user_turns(case.history)]
            if d.query not in wanted:
                return [f"query is {json.dumps(d.query, ensure_ascii=False)}: a correction with no offer before it "
                        "is searched as typed or with the user's request, never with the reply"]
            return []
        chosen = d.referent or ""
        rejected = [o.text for o in offer[1] if o.text not in chosen and chosen not in o.text or not chosen]
        named = [o for o in rejected for p in d.parts if p.name != "referent" and o.lower() in p.text.lower()]
        if named:
            return [f"query is {json.dumps(d.query, ensure_ascii=False)}: a correction combined with "
                    f"{json.dumps(named[0], ensure_ascii=False)}, an option it rejects"]
        return []

    def _shape_parts(self, case: Case, d, expect: str) -> list[str]:
        """With role-tagged history: a follow-up's query is the combine template over its own parts, its anchor
        one of the user's turns (``case.anchor`` when given), never the assistant's; a substantive message is
        searched as typed; a correction never with an option it rejects (after an offer, every option but the
        replacement it picks), and with no offer before it, as typed or with a user turn (its request), never
        with the reply it corrects."""
        if expect == "correction":
            return self._correction(case, d)
        if expect != "follow_up":
            if expect == "substantive" and d.query != case.message:
                return [f"query is {json.dumps(d.query, ensure_ascii=False)}: a {expect} must be searched as typed"]
            return []
        out = []
        users = user_turns(case.history)
        if case.anchor is not None and d.anchor != case.anchor:
            out.append(f"query combined with {json.dumps(d.anchor, ensure_ascii=False)}, "
                       f"expected {json.dumps(case.anchor, ensure_ascii=False)}")
        elif d.anchor is not None and not any(_drawn_from(d.anchor, u) for u in users):
            out.append(f"query combined with {json.dumps(d.anchor, ensure_ascii=False)}, which is no user turn")
        # the template the decision used, over the parts it found (the message among them)
        want = fill_template(template_for(self.pack.settings, d.parts), **{p.name: p.text for p in d.parts})
        if len(d.parts) <= 1:
            want = case.message
        if d.query != want:
            out.append(f"query is {json.dumps(d.query, ensure_ascii=False)}, expected the combine template over "
                       f"its parts: {json.dumps(want, ensure_ascii=False)}")
        return out

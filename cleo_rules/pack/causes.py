"""A base pack's checks that a team's own setting breaks, found and reported as that setting's consequence.

A team pack built on ``cleo-en`` may change a setting (``settings: {max_follow_up_words: 10}``); an example of a
cleo-en rule, or a case of cleo-en's corpus, may then fail. The failure is not in cleo-en, and the team cannot edit
cleo-en's files: it is a consequence of the team's setting. :func:`find_causes` tells which failures go away with
the setting at the value the bases give it (each of the pack's own settings tried alone), and makes of them one
:class:`Cause`, placed at the setting in the team's ``pack.yaml`` (E157), with the fixes the team can make: a value
of the setting that passes, when a few steps towards the bases' value find one, or ``disable:`` of the rules it
breaks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import Problem
from .model import Pack, PackSettings

__all__ = ["Cause", "find_causes", "own_settings", "with_settings"]

#: values tried between the team's and the bases' for an integer setting, to name the nearest that passes
_STEPS = 8


@dataclass(frozen=True)
class Cause:
    """The failures one setting of the pack's own manifest brings about in its bases' checks.

    ``key``, ``value``: the setting as the pack gives it; ``base_value``: as its bases give it (or the default);
    ``problem``: the finding, placed at the setting in the pack's manifest; ``examples``: the bases' example
    problems it explains, as they would be reported; ``cases``: ``(base name, outcome)`` of each failing corpus case of
    a base it explains; ``rules``: the rules whose checks fail, in order; ``passes_at``: the nearest value that
    passes, when one was found.
    """

    key: str
    value: object
    base_value: object
    problem: Problem
    examples: tuple[Problem, ...] = ()
    cases: tuple = ()
    rules: tuple[str, ...] = ()
    passes_at: object = None

    @property
    def count(self) -> int:
        return len(self.examples) + len(self.cases)

    def to_dict(self) -> dict:
        return {"setting": self.key, "value": self.value, "base_value": self.base_value,
                "passes_at": self.passes_at, "rules": list(self.rules), "examples": [p.to_dict() for p in
                                                                                     self.examples],
                "cases": [{"pack": name, **o.to_dict()} for name, o in self.cases],
                "problem": self.problem.to_dict()}


def with_settings(pack: Pack, settings: PackSettings) -> Pack:
    """``pack`` with other settings: the same rules, lexicon, templates and files."""
    return Pack(name=pack.name, version=pack.version, locale=pack.locale, description=pack.description,
                path=pack.path, content_hash=pack.content_hash, settings=settings, context=pack.context,
                slots=pack.slots, slots_seed=pack.slots_seed, family_rules=pack.family_rules, lexicon=pack.lexicon,
                referent_words=pack.referent_words, manifest=pack.manifest, sources=pack.sources,
                composition=pack.composition)


def _given(manifest) -> dict:
    data = manifest.data if manifest is not None and isinstance(manifest.data, dict) else {}
    given = data.get("settings")
    fields = PackSettings.__dataclass_fields__
    return {k: v for k, v in given.items() if k in fields} if isinstance(given, dict) else {}


def own_settings(pack: Pack) -> dict:
    """``{key: (value, base value)}`` of each setting the pack's own manifest gives that differs from what its
    bases give (or the default); empty for a pack built on nothing."""
    if not pack.composition or pack.manifest is None:
        return {}
    below = dataclasses.asdict(PackSettings())
    for base in pack.composition.bases:
        below.update(_given(base.manifest))
    return {k: (v, below[k]) for k, v in _given(pack.manifest).items() if below.get(k) != v}


def _candidates(value, base_value) -> list:
    """Values of an integer setting from the team's towards the bases', nearest first (at most :data:`_STEPS`)."""
    if not (isinstance(value, int) and isinstance(base_value, int)) or isinstance(value, bool):
        return []
    step = 1 if base_value > value else -1
    return list(range(value + step, base_value, step))[:_STEPS]


def find_causes(pack: Pack, problems, base_reports, example_problems: Callable[[Pack, object], list],
                judge: Callable[[Pack], Callable[[object], bool]]) -> tuple[list[Cause], list[Problem]]:
    """The causes among the bases' failures, and ``problems`` without the example problems they explain.

    ``problems`` are the pack's example problems (placed, each naming its pack); ``base_reports`` the runs of its
    bases' corpora; ``example_problems(pack, rule)`` judges one rule's examples, ``judge(pack)`` gives whether a
    corpus case passes in that pack.
    """
    settings = own_settings(pack)
    theirs = [p for p in problems if p.pack and p.pack != pack.name and p.rule]
    failing = [(base.name, o) for base, report in base_reports if report is not None for o in report.failed]
    if not settings or not (theirs or failing):
        return [], list(problems)
    causes, explained = [], set()
    for key, (value, base_value) in settings.items():
        def passes(v) -> tuple[list, list]:
            other = with_settings(pack, dataclasses.replace(pack.settings, **{key: v}))
            passed = judge(other)
            still = {(p.rule, p.pointer) for rule in {p.rule for p in theirs}
                     for p in example_problems(other, pack.rule(rule))}
            return ([p for p in theirs if (p.rule, p.pointer) not in still and id(p) not in explained],
                    [(n, o) for n, o in failing if passed(o.case)])
        examples, cases = passes(base_value)
        if not examples and not cases:
            continue
        passes_at = next((v for v in _candidates(value, base_value)
                          if (lambda got: len(got[0]) == len(examples) and len(got[1]) == len(cases))(passes(v))),
                         base_value)
        explained.update(id(p) for p in examples)
        failing = [f for f in failing if f not in cases]
        rules = tuple(dict.fromkeys([p.rule for p in examples] + [o.case.rule or o.culprit for _, o in cases
                                                                   if o.case.rule or o.culprit]))
        causes.append(Cause(key, value, base_value, _problem(pack, key, value, base_value, passes_at, examples,
                                                             cases, rules), tuple(examples), tuple(cases), rules,
                            passes_at))
    return causes, [p for p in problems if id(p) not in explained]


def _problem(pack: Pack, key, value, base_value, passes_at, examples, cases, rules) -> Problem:
    packs = sorted({p.pack for p in examples} | {name for name, _ in cases})
    what = [f"{len(examples)} example{'s' if len(examples) != 1 else ''}"] if examples else []
    what += [f"{len(cases)} corpus case{'s' if len(cases) != 1 else ''}"] if cases else []
    where = "the default" if len(packs) != 1 else packs[0] + "'s"
    fix = (f"set {key} to {passes_at}" + (f" or beyond, towards {where} {base_value}" if passes_at != base_value
                                          else f" ({where} value)"))
    shown = ", ".join(rules[:3]) + (", …" if len(rules) > 3 else "")
    assert pack.manifest is not None
    return pack.manifest.problem(
        "E157", f"settings.{key}: {value} makes {' and '.join(what)} of {', '.join(packs)} fail "
                f"({', '.join(packs)} has {base_value})", f"/settings/{key}", rank=6,
        help=f"{fix}, or turn off the rule{'s' if len(rules) != 1 else ''} it breaks in this pack.yaml: "
             f"disable: [{shown}]")

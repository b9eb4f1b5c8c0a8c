"""Every rule id of a pack and of the packs it is built on: what ``cleo-rules rules`` lists.

:func:`list_rules` gives one :class:`ListedRule` per rule of the composed
pack (its classification rules in the order reports list them, then its
referent rules), each with the pack it comes from, and then one per rule a
``disable:`` left out, read from the base's file as loaded (a disabled rule
is not compiled into the pack, yet a designer needs its id to find it). So a
designer finds the id to disable, or to replace with a rule of the same id.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ListedRule", "list_rules"]


@dataclass(frozen=True)
class ListedRule:
    """One rule: its ``id``, ``kind`` (``correction``, ``follow_up``, ``vocabulary``, ``referent``), the pack it
    comes from (``pack``), its ``description``, the file and line it is defined at; ``disabled_by`` names the pack
    whose ``disable:`` leaves it out (None: the rule applies), ``replaces`` the pack whose rule of the same id it
    takes the place of (None: it replaces nothing)."""

    id: str
    kind: str
    pack: str
    description: str
    file: str
    line: int
    disabled_by: str | None = None
    replaces: str | None = None

    def status(self) -> str:
        """``disabled by acme``, ``replaces cleo-en's``, or empty for a rule that applies as written."""
        if self.disabled_by is not None:
            return f"disabled by {self.disabled_by}"
        return f"replaces {self.replaces}'s" if self.replaces is not None else ""

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "pack": self.pack, "description": self.description,
                "file": self.file, "line": self.line, "disabled": self.disabled_by is not None,
                "disabled_by": self.disabled_by, "replaces": self.replaces}


def list_rules(pack) -> list[ListedRule]:
    """Every rule of the compiled ``pack`` and of its bases (:class:`ListedRule`), the rules its composition
    disables last, each marked."""
    replaced = pack.composition.replaced
    listed = []
    seen = set()
    for rule in (*pack.rules, *pack.referent_rules):
        if rule.id in seen:
            continue
        seen.add(rule.id)
        change = replaced.get(rule.id)
        listed.append(ListedRule(rule.id, str(rule.kind), pack.origin(rule), rule.description or "", rule.file,
                                 rule.line, replaces=change.of if change is not None else None))
    for change in pack.composition.disabled.values():
        listed.append(_disabled(pack, change))
    return listed


def _disabled(pack, change) -> ListedRule:
    """The rule ``change`` leaves out, as the last file of the pack ``change.of`` that defines it holds it."""
    from .families import family

    files = [src for b in pack.composition.bases if b.name == change.of for src in b.sources.values()]
    if change.of == pack.name:  # a pack may disable a rule of its own
        files += pack.sources.values()
    for src in reversed(files):
        data = src.data if isinstance(src.data, dict) else {}
        try:
            fam = family(str(data.get("kind")))
        except KeyError:
            continue
        items = data.get(fam.items) if fam.items is not None else None
        for i, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict) and item.get("id") == change.rule:
                description = item.get("description")
                line, _ = src.where(f"/{fam.items}/{i}")
                return ListedRule(change.rule, str(fam.rule_kind), change.of,
                                  description if isinstance(description, str) else "", src.display, line,
                                  disabled_by=change.by)
    return ListedRule(change.rule, "", change.of, "", "", 0, disabled_by=change.by)

"""Corpus templates: literal text with slots and inline choices.

Syntax (in ``generate:`` blocks and in slot fillers, which are templates too)::

    {name}       one filler of slot `name` (slots are defined in a `kind: slots` file)
    {name?}      a filler of `name`, or nothing
    {a|b|c}      one of the alternatives, each a template: {the {ordinal} one|option b}
    {|please}    an alternative may be empty: "please" or nothing
    {{ and }}    literal braces

After expansion, runs of spaces collapse to one, spaces before ``, . ! ? ; :``
are dropped, a leading ``,;:`` is dropped and the text is stripped, so
optional parts can be written with spaces around them:
``"{sorry?} we {already?} tried {that}"``.

A template is a tree of literal text, sequences and choices. Every expansion
has an index in ``range(count)`` (mixed radix), so a template with millions of
expansions can be sampled without listing them.

A *conversation* template is a few templates expanded together (the message,
the turns of its history, the referent it must find):
:meth:`Grammar.compile_joint`. A slot named in two or more of them is
**bound**: it takes the same filler in each, so a history that names
``{band}`` and a referent ``{band}`` agree. Every other slot or choice varies
freely. The joint expansion is one string, the parts separated by
:data:`SEP`; :func:`split_joint` cuts it apart.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import random
from dataclasses import dataclass

import regex

from ..incremental import memoized

_SLOT_NAME = regex.compile(r"[a-z][a-z0-9_]*")
_SPACES = regex.compile(r"\s+")
_BEFORE_PUNCT = regex.compile(r" (?=[,.!?;:])")
_LEADING = regex.compile(r"^[\s,;:]+")
_DOUBLE_COMMA = regex.compile(r",(?:\s*,)+")

MAX_SLOT_DEPTH = 8  # slot fillers referring to slots referring to slots ...
SEP = "\x00"   # between the parts of a joint expansion (YAML text cannot hold it)
MAX_BINDINGS = 256  # fillers of a conversation's bound slots taken together: more are sampled, seeded


class TemplateError(ValueError):
    """A template cannot be parsed or refers to a slot that does not exist."""

    def __init__(self, message: str, help: str = ""):
        super().__init__(message)
        self.help = help


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Seq:
    parts: tuple


@dataclass(frozen=True)
class Alt:
    options: tuple


@dataclass(frozen=True)
class SlotRef:
    name: str
    optional: bool


@memoized
@functools.lru_cache(maxsize=16384)
def parse_template(template: str) -> Seq:
    """Parse ``template`` into a tree of :class:`Lit`, :class:`Seq`, :class:`Alt` and :class:`SlotRef` (frozen: the
    tree of a text is remembered, and shared)."""
    node, pos = _parse_seq(template, 0, top=True)
    return node


def _parse_seq(t: str, pos: int, *, top: bool):
    parts: list = []
    buf: list[str] = []
    n = len(t)

    def flush():
        if buf:
            parts.append(Lit("".join(buf)))
            buf.clear()

    while pos < n:
        ch = t[pos]
        if ch == "{":
            if t.startswith("{{", pos):
                buf.append("{")
                pos += 2
                continue
            flush()
            node, pos = _parse_braces(t, pos + 1)
            parts.append(node)
            continue
        if ch == "}":
            if top and t.startswith("}}", pos):
                buf.append("}")
                pos += 2
                continue
            if top:
                raise TemplateError(f"unmatched '}}' at position {pos} in {t!r}", "write }} for a literal brace")
            break
        if ch == "|" and not top:
            break
        buf.append(ch)
        pos += 1
    flush()
    return Seq(tuple(parts)), pos


def _parse_braces(t: str, pos: int):
    """Parse after an opening brace up to and including its closing brace."""
    start = pos - 1
    m = _SLOT_NAME.match(t, pos)
    if m is not None:
        end = m.end()
        optional = t.startswith("?", end)
        close = end + (1 if optional else 0)
        if t.startswith("}", close):
            return SlotRef(m.group(), optional), close + 1
    options = []
    while True:
        node, pos = _parse_seq(t, pos, top=False)
        options.append(node)
        if pos >= len(t):
            raise TemplateError(f"unclosed '{{' at position {start} in {t!r}",
                                "close it with }, or write {{ for a literal brace")
        if t[pos] == "|":
            pos += 1
            continue
        pos += 1  # the closing brace
        break
    if len(options) == 1:
        inner = t[start + 1:pos - 1]
        raise TemplateError(f"{{{inner}}} at position {start} in {t!r} is neither a slot name nor a choice",
                            "slot names are lower case letters, digits and _ ({ordinal}, {ordinal?}); "
                            "a choice separates alternatives with | ({please|thanks})")
    return Alt(tuple(options)), pos


def clean(text: str) -> str:
    """Tidy the spacing and punctuation left by empty optional parts."""
    text = _SPACES.sub(" ", text)
    text = _BEFORE_PUNCT.sub("", text)
    text = _DOUBLE_COMMA.sub(",", text)
    text = _LEADING.sub("", text)
    return text.strip()


def clean_lines(text: str) -> str:
    """:func:`clean` line by line, keeping the line breaks (a reply that lists options)."""
    return "\n".join(line for line in (clean(part) for part in text.split("\n")) if line)


def split_joint(raw: str) -> list[str]:
    """The parts of a joint expansion (:meth:`Grammar.compile_joint`), raw."""
    return raw.split(SEP)


def direct_slots(tree) -> set[str]:
    """The slots a parsed template names itself (not those its slots' fillers name)."""
    if isinstance(tree, SlotRef):
        return {tree.name}
    if isinstance(tree, Seq):
        return set().union(*(direct_slots(p) for p in tree.parts)) if tree.parts else set()
    if isinstance(tree, Alt):
        return set().union(*(direct_slots(o) for o in tree.options))
    return set()


class _Node:
    """A compiled template node: ``n`` expansions, decoded by index."""

    __slots__ = ("kind", "text", "items", "n")

    def __init__(self, kind: str, text: str = "", items: tuple = ()):
        self.kind, self.text, self.items = kind, text, items
        if kind == "lit":
            self.n = 1
        elif kind == "seq":
            n = 1
            for it in items:
                n *= it.n
            self.n = n
        else:
            self.n = sum(it.n for it in items)

    def expand(self, index: int) -> str:
        if self.kind == "lit":
            return self.text
        if self.kind == "seq":
            out = []
            for it in reversed(self.items):
                index, r = divmod(index, it.n)
                out.append(it.expand(r))
            return "".join(reversed(out))
        for it in self.items:
            if index < it.n:
                return it.expand(index)
            index -= it.n
        raise IndexError("expansion index out of range")

    def all(self) -> list[str]:
        if self.kind == "lit":
            return [self.text]
        if self.kind == "seq":
            if not self.items:
                return [""]
            return ["".join(c) for c in itertools.product(*(it.all() for it in self.items))]
        out: list[str] = []
        for it in self.items:
            out.extend(it.all())
        return out


_EMPTY_NODE = _Node("seq")


class Grammar:
    """The slots of one pack; compiles templates against them.

    Slot references are resolved when a template is compiled; an unknown
    slot, a slot that refers back to itself or a too deep chain is a
    :class:`TemplateError`. A compiled template has ``n`` expansions,
    ``expand(i)`` gives the i-th (raw, before :func:`clean`) and ``all()``
    lists them.
    """

    def __init__(self, slots):
        self.slots = {name: tuple(fillers) for name, fillers in slots.items()}
        self._resolved: dict[str, _Node] = {}
        self._resolving: list[str] = []

    def _slot(self, name: str) -> _Node:
        hit = self._resolved.get(name)
        if hit is not None:
            return hit
        if name not in self.slots:
            guess = difflib.get_close_matches(name, list(self.slots), n=1)
            hint = f"did you mean {{{guess[0]}}}? " if guess else ""
            raise TemplateError(f"unknown slot {{{name}}}",
                                f"{hint}define it under `slots:` in the pack's slots file"
                                + (f" (slots: {', '.join(sorted(self.slots))})" if self.slots else ""))
        if name in self._resolving:
            chain = " -> ".join(self._resolving[self._resolving.index(name):] + [name])
            raise TemplateError(f"slot {{{name}}} refers back to itself ({chain})",
                                "a slot's fillers may use other slots, but not in a circle")
        if len(self._resolving) >= MAX_SLOT_DEPTH:
            raise TemplateError(f"slots nest more than {MAX_SLOT_DEPTH} deep at {{{name}}}", "flatten the slot fillers")
        self._resolving.append(name)
        try:
            options = []
            for filler in self.slots[name]:
                try:
                    options.append(self._build(parse_template(filler)))
                except TemplateError as exc:
                    raise TemplateError(f"in a filler of slot {{{name}}}: {exc}", exc.help) from None
        finally:
            self._resolving.pop()
        node = _Node("alt", items=tuple(options))
        self._resolved[name] = node
        return node

    def _build(self, tree, bound=None) -> _Node:
        if isinstance(tree, Lit):
            return _Node("lit", tree.text)
        if isinstance(tree, Seq):
            return _Node("seq", items=tuple(self._build(p, bound) for p in tree.parts))
        if isinstance(tree, Alt):
            return _Node("alt", items=tuple(self._build(o, bound) for o in tree.options))
        if bound is not None and tree.name in bound:
            value = _Node("lit", bound[tree.name])
            return _Node("alt", items=(_EMPTY_NODE, value)) if tree.optional else value
        slot = self._slot(tree.name)
        return _Node("alt", items=(_EMPTY_NODE,) + slot.items) if tree.optional else slot

    def compile(self, template: str) -> _Node:
        """Parse ``template`` and resolve its slots; raises :class:`TemplateError`."""
        return self._build(parse_template(template))

    def compile_joint(self, templates, seed: str = "") -> _Node:
        """Templates expanded together, their parts joined by :data:`SEP`; raises :class:`TemplateError`.

        A slot that two or more of ``templates`` name takes one filler in all
        of them (each of its expansions in turn; past :data:`MAX_BINDINGS`
        combinations of the bound slots, a sample seeded by ``seed``).
        """
        trees = [parse_template(t) for t in templates]
        named = [direct_slots(t) for t in trees]
        shared = sorted(n for n in set().union(*named) if sum(n in s for s in named) >= 2)
        sep = _Node("lit", SEP)

        def joined(bound):
            items = []
            for i, tree in enumerate(trees):
                if i:
                    items.append(sep)
                items.append(self._build(tree, bound))
            return _Node("seq", items=tuple(items))

        if not shared:
            return joined(None)
        slots = [self._slot(name) for name in shared]
        total = 1
        for node in slots:
            total *= node.n
        if total <= MAX_BINDINGS:
            picks = range(total)
        else:
            picks = sorted(random.Random(f"{seed}\x00{SEP.join(templates)}").sample(range(total), MAX_BINDINGS))
        options = []
        for index in picks:
            bound = {}
            for name, node in zip(reversed(shared), reversed(slots)):
                index, r = divmod(index, node.n)
                bound[name] = node.expand(r)
            options.append(joined(bound))
        return _Node("alt", items=tuple(options))

    def slots_used(self, template: str) -> list[str]:
        """Every slot ``template`` uses, directly or through other slots, sorted."""
        seen: set[str] = set()

        def walk(tree):
            if isinstance(tree, SlotRef):
                if tree.name not in seen and tree.name in self.slots:
                    seen.add(tree.name)
                    for filler in self.slots[tree.name]:
                        try:
                            walk(parse_template(filler))
                        except TemplateError:
                            pass
            elif isinstance(tree, Seq):
                for p in tree.parts:
                    walk(p)
            elif isinstance(tree, Alt):
                for o in tree.options:
                    walk(o)

        try:
            walk(parse_template(template))
        except TemplateError:
            pass
        return sorted(seen)

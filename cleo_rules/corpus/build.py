"""Write the generated corpus: ``corpus/generated/``, one file per rule, rebuilt only where stale.

:func:`build_corpus` expands the pack's templates (:mod:`.generate`),
compares each group with its file (:func:`.run.find_stale`), and rewrites only
the files whose cases or inputs changed; files of rules that are gone are
removed; hand-written files are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import files as cfiles
from .files import default_corpus_dir, display
from .generate import GENERATOR_VERSION, Group, generate
from .model import CROSS
from .run import find_stale

__all__ = ["BuildResult", "build_corpus"]


@dataclass
class BuildResult:
    corpus_dir: Path
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    without_templates: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return sum(len(g.cases) for g in self.groups)

    def format(self) -> str:
        rules = [g for g in self.groups if g.name != CROSS]
        pos = sum(1 for g in rules for c in g.cases if c.rule)
        neg = sum(1 for g in rules for c in g.cases if c.not_rules)
        cross = sum(len(g.cases) for g in self.groups if g.name == CROSS)
        lines = [f"built {display(self.corpus_dir / 'generated')}/: {self.cases:,} cases for {len(rules)} rules "
                 f"({pos:,} positive, {neg:,} negative) and {cross:,} cross-rule cases; "
                 f"{len(self.written)} file{'s' if len(self.written) != 1 else ''} written, "
                 f"{len(self.unchanged)} unchanged, {len(self.removed)} removed"]
        lines += [f"  wrote   {w}" for w in self.written]
        lines += [f"  removed {r}" for r in self.removed]
        if self.without_templates:
            lines.append(f"  no templates (no generated cases): {', '.join(self.without_templates)}")
        return "\n".join(lines)


def build_corpus(pack, corpus_dir=None) -> BuildResult:
    """Regenerate ``corpus_dir/generated/`` (default: ``corpus/`` beside the pack).

    Only files whose cases or inputs changed are rewritten; generated files of
    rules that are gone are removed; hand-written files are never touched.
    """
    corpus_dir = Path(corpus_dir) if corpus_dir is not None else default_corpus_dir(pack)
    groups = generate(pack)
    gdir = corpus_dir / cfiles.GENERATED_DIR
    _, existing, _ = cfiles.read_dir(corpus_dir)
    stale = {s.group for s in find_stale(groups, existing, corpus_dir)}
    result = BuildResult(corpus_dir, groups=groups)
    rules = {r.id: r for r in pack.all_rules()}
    keep = set()
    for g in groups:
        if not g.cases:
            if g.name != CROSS:
                result.without_templates.append(g.name)
            continue
        fname = cfiles.group_file(g.name)
        keep.add(fname)
        path = gdir / fname
        if g.name not in stale and path.is_file():
            result.unchanged.append(cfiles.display(path))
            continue
        header = {"pack": pack.name, "pack_version": str(pack.version)}
        if g.name != CROSS:
            header["rule"] = g.name
        header.update({"from": g.source, "hash": g.hash, "generator": GENERATOR_VERSION})
        what = (f"rule {g.name} ({g.source}, {rules[g.name].kind})" if g.name in rules
                else f"the cross-rule cases ({g.source})")
        gdir.mkdir(parents=True, exist_ok=True)
        path.write_text(cfiles.render_corpus_file(path, header, g.cases, what=what), encoding="utf-8")
        result.written.append(cfiles.display(path))
    for cf in existing:
        if cf.path.name not in keep and cf.generated:
            cf.path.unlink()
            result.removed.append(cf.display)
    return result

"""``cleo-rules init``: a team's first rule pack, and ``cleo-rules schemas``: the schemas for editors.

:func:`init_pack` writes into a directory (a team's repository, say):

* ``rules/``: a manifest that extends ``cleo-en`` (the bundled pack, within
  the major version installed), with ``disable:`` and ``settings:`` ready to
  fill, and two files for the team's own corrections and follow-up patterns,
  empty, each with a commented example rule (:mod:`.extend`);
  with ``standalone=True``, the pack of its own it wrote before packs could
  be built on others: a manifest, one vocabulary set, one follow-up pattern
  and one correction with its request forms, each with examples,
  counterexamples and templates, and the generator's slots;
* ``corpus/``: the generated corpus (``corpus/generated/``, for the
  standalone pack) and a hand-written ``regressions.yaml``;
* ``schemas/``: the JSON Schemas that the files' ``# yaml-language-server:
  $schema=`` lines point at, by relative paths inside that directory.

``cleo-rules check`` passes on either straight away.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import UsageError

__all__ = ["InitResult", "init_pack", "pack_name_for", "write_schemas"]

_NAME = re.compile(r"[^a-z0-9._-]+")


def pack_name_for(directory: Path) -> str:
    """A pack name (``^[a-z0-9][a-z0-9._-]*$``) from a directory's name."""
    name = _NAME.sub("-", directory.resolve().name.lower()).strip("-._")
    return name or "team-pack"


def _starter() -> Path:
    return Path(str(resources.files(__package__ or "cleo_rules.starter")))


def write_schemas(out_dir) -> list[Path]:
    """Copy every JSON Schema of rule files, manifests and corpus files into ``out_dir``."""
    from ..resources import schemas_dir

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file, not a directory")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for schema in sorted(schemas_dir().glob("*.schema.json")):
        target = out / schema.name
        shutil.copyfile(schema, target)
        written.append(target)
    return written


@dataclass
class InitResult:
    directory: Path
    name: str
    written: list[Path] = field(default_factory=list)
    corpus: object = None  # the corpus BuildResult


def _base_range() -> str:
    """The versions of the bundled pack a new pack is written for: ``^MAJOR.MINOR`` of the one installed."""
    from ..pack.discovery import Version, pack_info
    from ..resources import rules_dir

    v = Version.parse(pack_info(rules_dir()).version)
    return f"^{v.major}.{v.minor}"


def init_pack(directory=".", *, name: str | None = None, standalone: bool = False) -> InitResult:
    """Write a minimal team pack, its corpus and its schemas into ``directory``: a pack built on ``cleo-en``
    (``extends:``), or with ``standalone`` the starter pack of its own.

    Refuses (:class:`UsageError`) when ``directory`` already holds ``rules/``,
    ``corpus/`` or ``schemas/`` files that would be overwritten.
    """
    from ..corpus import build_corpus
    from ..pack.compile import compile_pack

    root = Path(directory)
    starter = _starter() if standalone else _starter() / "extend"
    rules_src = starter / "rules"
    corpus_src = starter / "corpus"
    pack_name = name or pack_name_for(root)
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", pack_name):
        raise UsageError(f"{pack_name!r} is not a pack name: use lower-case letters, digits, '.', '_' and '-'")
    planned = [root / "rules" / p.name for p in sorted(rules_src.glob("*.yaml"))]
    planned += [root / "corpus" / p.name for p in sorted(corpus_src.glob("*.yaml"))]
    clash = [p for p in planned if p.exists()]
    if (root / "corpus" / "generated").exists():
        clash.append(root / "corpus" / "generated")
    if clash:
        shown = ", ".join(str(p) for p in clash[:3]) + (" ..." if len(clash) > 3 else "")
        raise UsageError(f"{root} already holds a rule pack ({shown}); init writes a new pack only "
                         f"and overwrites nothing")
    result = InitResult(root, pack_name)
    (root / "rules").mkdir(parents=True, exist_ok=True)
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    for src in sorted(rules_src.glob("*.yaml")):
        text = src.read_text(encoding="utf-8")
        if src.name == "pack.yaml":
            text = re.sub(r"(?m)^pack: .*$", f"pack: {pack_name}", text, count=1)
            text = re.sub(r'(?m)^(    version: )"[^"]*"', lambda m: f'{m.group(1)}"{_base_range()}"', text, count=1)
        target = root / "rules" / src.name
        target.write_text(text, encoding="utf-8")
        result.written.append(target)
    for src in sorted(corpus_src.glob("*.yaml")):
        target = root / "corpus" / src.name
        shutil.copyfile(src, target)
        result.written.append(target)
    result.written += write_schemas(root / "schemas")
    pack = compile_pack(root / "rules")  # its examples are judged: a starter that does not check is a bug
    if standalone:
        result.corpus = build_corpus(pack, root / "corpus")
    return result

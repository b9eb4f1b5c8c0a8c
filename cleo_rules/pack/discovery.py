"""Where rule packs come from, which are available, and which versions are wanted.

A pack is named in one of three ways:

* a **directory** (or its ``pack.yaml``): ``rules/``, ``./my-pack``;
* the **name** of an installed pack: a Python distribution advertises it in
  the entry point group ``cleo_rules.packs``; the entry point's object is a
  function returning the pack directory, a path, or a package whose
  directory is the pack. A team ships its own pack with ``pip install``::

      [project.entry-points."cleo_rules.packs"]
      acme-en = "acme_rules:pack_path"

* nothing: the **bundled** default pack (``cleo-en``).

A command given no pack finds one with :func:`find_pack`, in this order: the
``CLEO_RULES_PACK`` environment variable; ``[tool.cleo-rules] pack = "..."``
in the nearest ``pyproject.toml`` (a path relative to that file, or a name);
``./rules`` when it holds a ``pack.yaml``; else the bundled pack. The result
says which of these it was, so every command can name the pack it used.

Listing reads manifests only; nothing is compiled. Version ranges are
semver ranges written the way npm and pip users expect: ``>=1.0,<2``,
``^1.2``, ``~1.2.3``, ``~=1.2``, ``1.x``, ``1.2.3``, alternatives joined by
``||``. A pre-release (``2.0.0-rc.1``) satisfies a range only when a
comparator of the range names a pre-release of the same ``major.minor.patch``.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import PackNotFound, PackVersionError, Problem, UsageError
from ..reading.load import MANIFEST, display, load_yaml, resolve_member
from ..resources import rules_dir

GROUP = "cleo_rules.packs"
ENV_VAR = "CLEO_RULES_PACK"

__all__ = [
    "ENV_VAR", "GROUP", "FoundPack", "PackInfo", "Version", "VersionRange", "VersionRangeError",
    "available_packs", "check_pack_version", "find_pack", "pack_info", "resolve_name", "resolve_pack",
]


# --------------------------------------------------------------------------
# Versions and ranges
# --------------------------------------------------------------------------


class VersionRangeError(UsageError, ValueError):
    """A version or version range is not written as semver."""

    code = "E191"


_SEMVER = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)


@functools.total_ordering
@dataclass(frozen=True)
class Version:
    """A semantic version; ordered by semver precedence (build metadata ignored)."""

    major: int
    minor: int
    patch: int
    prerelease: tuple = ()

    @classmethod
    def parse(cls, text) -> "Version":
        if isinstance(text, Version):
            return text
        m = _SEMVER.fullmatch(str(text).strip())
        if m is None:
            raise VersionRangeError(f"{str(text)!r} is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.2.0)")
        pre = tuple(int(p) if p.isdigit() else p for p in m.group(4).split(".")) if m.group(4) else ()
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre)

    @property
    def core(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def _key(self) -> tuple[tuple[int, int, int], int, tuple[tuple[int, int, str], ...]]:
        if not self.prerelease:
            return (self.core, 1, ())
        # numeric identifiers sort before alphanumeric ones, and numerically
        return (self.core, 0, tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in self.prerelease))

    def __lt__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self):
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        return text


_OPS = {
    ">=": lambda v, b: v >= b, ">": lambda v, b: v > b, "<": lambda v, b: v < b,
    "<=": lambda v, b: v <= b, "==": lambda v, b: v == b, "!=": lambda v, b: v != b,
}
_COMPARATOR = re.compile(r"(\^|~=|~|>=|<=|==|!=|>|<|=)?\s*([^\s,|]+)")
_PARTIAL = re.compile(
    r"v?(?P<p>[0-9xX*]+(?:\.[0-9xX*]+){0,2})(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?"
)
_SEPARATOR = re.compile(r"\s*,?\s*")
_RANGE_HELP = "write comparators such as >=1.0,<2 or ^1.2 or ~1.2.3, alternatives joined by ||"


def _partial(text: str, whole: str) -> tuple[list[int], tuple]:
    """``"1.2"`` -> ``([1, 2], ())``; wildcards end the list (``1.x`` -> ``[1]``)."""
    m = _PARTIAL.fullmatch(text)
    if m is None:
        raise VersionRangeError(f"invalid version range {whole!r}: {text!r} is not a version; {_RANGE_HELP}")
    nums: list[int] = []
    wild = False
    for part in m.group("p").split("."):
        if part in ("x", "X", "*"):
            wild = True
        elif wild or not part.isdigit() or (len(part) > 1 and part.startswith("0")):
            raise VersionRangeError(f"invalid version range {whole!r}: {text!r} is not a version; {_RANGE_HELP}")
        else:
            nums.append(int(part))
    pre = ()
    if m.group("pre"):
        if len(nums) < 3:
            raise VersionRangeError(f"invalid version range {whole!r}: a pre-release needs a full version in {text!r}")
        pre = Version.parse(f"0.0.0-{m.group('pre')}").prerelease
    return nums, pre


def _bump(nums: list[int]) -> Version:
    """The first version past every version the partial ``nums`` names."""
    if len(nums) == 1:
        return Version(nums[0] + 1, 0, 0)
    return Version(nums[0], nums[1] + 1, 0)


def _desugar(op: str | None, nums: list[int], pre: tuple, whole: str, token: str) -> list[tuple[str, Version]]:
    n = len(nums)
    full = nums + [0] * (3 - n)
    low = Version(full[0], full[1], full[2], pre)
    if op in (None, "=", "=="):
        if n == 0:
            return []
        return [("==", low)] if n == 3 else [(">=", low), ("<", _bump(nums))]
    if op == ">=":
        return [(">=", low)] if n else []
    if op == "<=":
        if n == 0:
            return []
        return [("<=", low)] if n == 3 else [("<", _bump(nums))]
    if op == ">":
        if n == 0:
            raise VersionRangeError(f"invalid version range {whole!r}: nothing is above {token!r}; {_RANGE_HELP}")
        return [(">", low)] if n == 3 else [(">=", _bump(nums))]
    if op == "<":
        if n == 0:
            raise VersionRangeError(f"invalid version range {whole!r}: nothing is below {token!r}; {_RANGE_HELP}")
        return [("<", low)]
    if op == "!=":
        if n != 3:
            raise VersionRangeError(f"invalid version range {whole!r}: != needs a full version in {token!r}")
        return [("!=", low)]
    if op == "^":
        if n == 0:
            return []
        if nums[0] > 0 or n == 1:
            high = Version(nums[0] + 1, 0, 0)
        elif nums[1] > 0 or n == 2:
            high = Version(0, nums[1] + 1, 0)
        else:
            high = Version(0, 0, nums[2] + 1)
        return [(">=", low), ("<", high)]
    if op == "~":
        if n == 0:
            return []
        return [(">=", low), ("<", _bump(nums[:2]))]
    if op == "~=":
        if n < 2:
            raise VersionRangeError(f"invalid version range {whole!r}: ~= needs at least major.minor in {token!r}")
        return [(">=", low), ("<", _bump(nums[: n - 1]))]
    raise AssertionError(op)  # pragma: no cover


@dataclass(frozen=True)
class VersionRange:
    """A parsed semver range; ``version in range_`` tests a version.

    ``alternatives`` holds, per ``||`` branch, the primitive constraints
    ``(op, Version)`` every one of which must hold.
    """

    text: str
    alternatives: tuple[tuple[tuple[str, Version], ...], ...]

    @classmethod
    def parse(cls, text) -> "VersionRange":
        if isinstance(text, VersionRange):
            return text
        if not isinstance(text, str) or not text.strip():
            raise VersionRangeError(f"invalid version range {text!r}: it is empty; {_RANGE_HELP}")
        alternatives = []
        for branch in text.split("||"):
            constraints: list[tuple[str, Version]] = []
            pos = 0
            rest = branch.strip()
            if not rest:
                raise VersionRangeError(f"invalid version range {text!r}: empty alternative around ||; {_RANGE_HELP}")
            while pos < len(rest):
                m = _COMPARATOR.match(rest, pos)
                if m is None:
                    raise VersionRangeError(f"invalid version range {text!r} near {rest[pos:]!r}; {_RANGE_HELP}")
                nums, pre = _partial(m.group(2), text)
                constraints += _desugar(m.group(1), nums, pre, text, m.group(0))
                pos = m.end()
                sep = _SEPARATOR.match(rest, pos)  # matches at any position: it may be empty
                pos = sep.end() if sep is not None else pos
            alternatives.append(tuple(constraints))
        return cls(text.strip(), tuple(alternatives))

    def __contains__(self, version) -> bool:
        return self.contains(version)

    def contains(self, version) -> bool:
        v = Version.parse(version)
        for constraints in self.alternatives:
            if not all(_OPS[op](v, bound) for op, bound in constraints):
                continue
            if v.prerelease and not any(b.prerelease and b.core == v.core for _, b in constraints):
                continue
            return True
        return False

    def __str__(self):
        return self.text


def check_pack_version(pack, require) -> None:
    """Raise :class:`PackVersionError` unless ``pack.version`` is in ``require``.

    ``require`` is a range string or :class:`VersionRange`; ``None`` accepts any.
    The error points at the manifest's ``version:`` (the pack keeps its manifest).
    """
    if require is None:
        return
    wanted = VersionRange.parse(require)
    try:
        ok = wanted.contains(pack.version)
    except VersionRangeError:
        ok = False
    if ok:
        return
    manifest = pack.manifest
    if manifest is not None:
        line, col = manifest.where("/version")
        shown = manifest.display
    else:
        line = col = 0
        shown = display(Path(pack.path) / MANIFEST)
    problem = Problem("E190", f"{pack.name} {pack.version} is outside the required version range {wanted}",
                      shown, line=line, col=col, pointer="/version", rank=0,
                      help="use a pack whose version is in the range, or change the range the runtime requires")
    raise PackVersionError([problem], pack=display(Path(pack.path)), required=str(wanted))


# --------------------------------------------------------------------------
# Finding packs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PackInfo:
    """One loadable pack, from its manifest only (nothing is compiled).

    ``origin`` is ``"entry point"``, ``"bundled"`` or ``"directory"``;
    ``entry_point`` and ``distribution`` name where an installed pack comes
    from; ``error`` says why the pack cannot be read (the other fields are
    then partly empty).
    """

    name: str
    version: str
    locale: str
    path: Path | None
    origin: str
    entry_point: str | None = None
    distribution: str | None = None
    description: str = ""
    error: str | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name, "version": self.version, "locale": self.locale,
            "path": str(self.path) if self.path else None, "origin": self.origin,
            "entry_point": self.entry_point, "distribution": self.distribution,
            "description": self.description, "error": self.error,
        }


def pack_info(path, *, origin: str = "directory", entry_point=None, distribution=None) -> PackInfo:
    """Read the manifest of the pack at ``path`` (a directory or its ``pack.yaml``)."""
    p = Path(path)
    if p.name == MANIFEST and p.is_file():
        p = p.parent
    manifest = p / MANIFEST
    if not manifest.is_file():
        return PackInfo(entry_point or "?", "", "", p, origin, entry_point, distribution,
                        error=f"{MANIFEST} not found in {display(p)}")
    if resolve_member(p, MANIFEST) is None:  # a link out of the pack: never read, never echoed
        return PackInfo(entry_point or "?", "", "", p, origin, entry_point, distribution,
                        error=f"{MANIFEST} is a link to a file outside the pack directory")
    src, problems = load_yaml(manifest, display(manifest))
    if src is None or not isinstance(src.data, dict):
        why = problems[0].format().split("\n")[0] if problems else "the manifest is not a mapping"
        return PackInfo(entry_point or "?", "", "", p, origin, entry_point, distribution, error=why)
    data = src.data
    return PackInfo(name=str(data.get("pack", entry_point or "?")), version=str(data.get("version", "")),
                    locale=str(data.get("locale", "")), path=p, origin=origin, entry_point=entry_point,
                    distribution=distribution, description=str(data.get("description", "")).strip())


def _entry_points():
    from importlib.metadata import entry_points

    seen = set()
    out = []
    for ep in entry_points(group=GROUP):
        key = (ep.name, ep.value)
        if key not in seen:  # the same distribution found twice on sys.path
            seen.add(key)
            out.append(ep)
    return out


def _ep_distribution(ep) -> str | None:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None
    try:
        return f"{dist.metadata['Name']} {dist.version}"
    except Exception:  # noqa: BLE001 - metadata of a third-party distribution
        return None


def _ep_path(ep) -> Path:
    """The pack directory an entry point advertises. Raises on a broken one."""
    target = ep.load()
    if callable(target) and not isinstance(target, type):
        target = target()
    if hasattr(target, "__path__") or hasattr(target, "__file__"):  # a package or module
        paths = list(getattr(target, "__path__", []) or [])
        target = paths[0] if paths else os.path.dirname(getattr(target, "__file__", "") or "")
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"entry point {ep.name} = {ep.value} gave {type(target).__name__}, not a pack directory")
    return Path(target)


def _from_entry_point(ep) -> PackInfo:
    dist = _ep_distribution(ep)
    try:
        path = _ep_path(ep)
    except Exception as exc:  # noqa: BLE001 - third-party code: report, never crash the listing
        return PackInfo(ep.name, "", "", None, "entry point", ep.name, dist,
                        error=f"entry point {ep.name} = {ep.value} cannot be loaded: {type(exc).__name__}: {exc}")
    return pack_info(path, origin="entry point", entry_point=ep.name, distribution=dist)


def available_packs() -> list[PackInfo]:
    """Every pack advertised in the ``cleo_rules.packs`` entry point group, and the bundled one.

    The bundled pack is listed through its entry point when the project's
    metadata is installed, else on its own (origin ``"bundled"``).
    """
    packs = [_from_entry_point(ep) for ep in _entry_points()]
    bundled = rules_dir().resolve()
    if not any(p.path is not None and p.path.resolve() == bundled for p in packs):
        packs.append(pack_info(bundled, origin="bundled"))
    return packs


def _looks_like_path(spec: str) -> bool:
    return (os.sep in spec or "/" in spec or spec.startswith(".") or spec.endswith((".yaml", ".yml"))
            or os.path.exists(spec))


def _pack_path(p: Path) -> Path:
    if not p.exists():
        raise PackNotFound(f"no rule pack at {display(p)}: no such directory",)
    if p.is_file() and p.name == MANIFEST:
        return p.parent
    return p


def resolve_pack(spec=None) -> Path:
    """The directory of the pack ``spec`` names: a path, an installed pack's name, or None (bundled).

    A string that exists on disk or looks like a path is a path (errors about
    it come from loading); any other string is looked up by entry point name,
    then by the ``pack:`` name in each available manifest.
    """
    if spec is None:
        return rules_dir()
    if not isinstance(spec, (str, os.PathLike)):
        raise UsageError(f"a pack is named by a directory or a name, not {type(spec).__name__}")
    if isinstance(spec, os.PathLike) or not spec or _looks_like_path(spec):
        return _pack_path(Path(spec))
    return resolve_name(spec)


def resolve_name(spec: str) -> Path:
    """The directory of the installed pack named ``spec``: an entry point's name, else a manifest's ``pack:``
    among the available packs; :class:`PackNotFound` (listing the installed packs) when none is."""
    eps = [ep for ep in _entry_points() if ep.name == spec]
    if len(eps) > 1:
        raise PackNotFound(f"rule pack name {spec!r} is advertised by {len(eps)} entry points "
                           f"({', '.join(e.value for e in eps)}); give the pack's directory instead")
    if eps:
        info = _from_entry_point(eps[0])
        if info.error or info.path is None:
            raise PackNotFound(f"rule pack {spec!r}: {info.error or 'the entry point gave no directory'}")
        return info.path
    packs = available_packs()
    named = [p.path for p in packs if p.name == spec and p.path is not None and not p.error]
    if named:
        return named[0]
    listed = ", ".join(f"{p.name} {p.version}".strip() for p in packs if not p.error) or "none"
    raise PackNotFound(f"no rule pack named {spec!r} and no directory {spec!r}; installed packs: {listed} "
                       f"(see `cleo-rules packs`)")


# --------------------------------------------------------------------------
# Which pack a command uses
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FoundPack:
    """The pack a command uses and how it was found.

    ``found_by`` is ``"argument"``, ``"CLEO_RULES_PACK"``, ``"pyproject.toml"``,
    ``"./rules"`` or ``"bundled"``; ``config`` is the ``pyproject.toml`` that
    named it, when one did.
    """

    path: Path
    found_by: str
    config: Path | None = None

    def describe(self) -> str:
        """How it was found, for people: ``./rules``, ``pyproject.toml ([tool.cleo-rules])``, ..."""
        if self.found_by == "pyproject.toml" and self.config is not None:
            return f"[tool.cleo-rules] in {display(self.config)}"
        if self.found_by == "argument":
            return "given"
        return self.found_by

    def to_dict(self) -> dict:
        return {"path": display(self.path), "found_by": self.found_by,
                "config": display(self.config) if self.config is not None else None}

    def record(self, pack=None, read: tuple | None = None) -> dict:
        """The pack used, for JSON: name, version and hash of the compiled ``pack``, then :meth:`to_dict`.

        Without ``pack`` (one that does not compile) the name and version come
        from the manifest alone (``"?"`` when it lacks them) and the hash is
        null: the manifest as the compiler read it (``read``, a
        :attr:`PackError.read <cleo_rules.errors.PackError.read>`), else read here.
        """
        if pack is not None:
            bases = [b.record() for b in pack.composition.bases]
            return {"name": pack.name, "version": str(pack.version), "hash": pack.content_hash, **self.to_dict(),
                    **({"bases": bases} if bases else {})}
        if read is not None:
            data = read[0].data if read[0] is not None and isinstance(read[0].data, dict) else None
            name, version = ("?", "") if data is None else (str(data.get("pack", "?")), str(data.get("version", "")))
        else:
            info = pack_info(self.path)
            name, version = (info.name if not info.error else "?"), info.version
        return {"name": name, "version": version or "?", "hash": None, **self.to_dict()}


def _nearest_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _configured(pyproject: Path) -> str | None:
    """``[tool.cleo-rules] pack`` of ``pyproject``, or None. Raises UsageError when it cannot be read."""
    import tomllib

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {display(pyproject)} while looking for [tool.cleo-rules]: {exc}") from None
    tool = data.get("tool", {})
    table = tool.get("cleo-rules") if isinstance(tool, dict) else None
    if table is None:
        return None
    value = table.get("pack") if isinstance(table, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{display(pyproject)}: [tool.cleo-rules] pack must be a directory or a pack's name, "
                         f"not {value!r}")
    return value


def _resolve_from(spec: str, base: Path, where: str) -> Path:
    """``spec`` as a pack path relative to ``base``, or an installed pack's name."""
    candidate = spec if os.path.isabs(spec) else os.path.join(base, spec)
    if _looks_like_path(spec) or os.path.exists(candidate):
        path = Path(candidate)
        if not path.exists():
            raise PackNotFound(f"{where} names {spec!r}: no rule pack at {display(path)}: no such directory")
        return _pack_path(path)
    try:
        return resolve_pack(spec)
    except PackNotFound as exc:
        raise PackNotFound(f"{where} names {spec!r}: {exc}") from None


def find_pack(spec=None, *, cwd=None, environ=None) -> FoundPack:
    """The pack a command uses: ``spec`` when given, else the first of

    1. the ``CLEO_RULES_PACK`` environment variable (a directory or a name);
    2. ``[tool.cleo-rules] pack`` in the nearest ``pyproject.toml`` from
       ``cwd`` up (a directory relative to that file, or a name);
    3. ``./rules`` when it holds a ``pack.yaml``;
    4. the bundled pack.
    """
    if spec is not None:
        return FoundPack(resolve_pack(spec), "argument")
    env = os.environ if environ is None else environ
    here = Path(cwd) if cwd is not None else Path.cwd()
    value = env.get(ENV_VAR)
    if value:
        return FoundPack(_resolve_from(value, Path(cwd) if cwd is not None else Path("."), ENV_VAR), ENV_VAR)
    pyproject = _nearest_pyproject(here.resolve())
    if pyproject is not None:
        value = _configured(pyproject)
        if value is not None:
            where = f"[tool.cleo-rules] pack in {display(pyproject)}"
            return FoundPack(_resolve_from(value, pyproject.parent, where), "pyproject.toml", pyproject)
    local = here / "rules"
    if (local / MANIFEST).is_file():
        return FoundPack(Path("rules") if cwd is None else local, "./rules")
    return FoundPack(rules_dir(), "bundled")

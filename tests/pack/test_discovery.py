"""Where packs come from (directory, installed name, bundled) and semver version ranges."""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from cleo_rules import load_pack
from cleo_rules.errors import PackError, PackNotFound, PackVersionError
from cleo_rules.pack import discovery
from cleo_rules.reading.load import display
from cleo_rules.pack.discovery import (
    GROUP, Version, VersionRange, VersionRangeError, available_packs, check_pack_version, resolve_pack,
)
from cleo_rules.resources import rules_dir

from helpers import PACKS

MINI = PACKS / "mini-1.0"


# -- versions ---------------------------------------------------------------

@pytest.mark.parametrize("lower, higher", [
    ("1.0.0", "1.0.1"), ("1.0.9", "1.1.0"), ("1.9.9", "2.0.0"), ("1.0.0", "1.10.0"),
    ("1.0.0-alpha", "1.0.0"), ("1.0.0-alpha", "1.0.0-alpha.1"), ("1.0.0-alpha.1", "1.0.0-alpha.beta"),
    ("1.0.0-alpha.beta", "1.0.0-beta"), ("1.0.0-beta.2", "1.0.0-beta.11"), ("1.0.0-rc.1", "1.0.0"),
])
def test_semver_precedence(lower, higher):
    assert Version.parse(lower) < Version.parse(higher)
    assert not Version.parse(higher) < Version.parse(lower)


def test_build_metadata_is_ignored_and_versions_print_back():
    assert Version.parse("1.2.3+build.7") == Version.parse("1.2.3")
    assert str(Version.parse("v1.2.3-rc.1")) == "1.2.3-rc.1"


@pytest.mark.parametrize("bad", ["1", "1.2", "01.2.3", "1.2.3.4", "x.y.z", ""])
def test_not_a_version(bad):
    with pytest.raises(VersionRangeError, match="not a semantic version"):
        Version.parse(bad)


RANGES = [
    # range, inside, outside
    (">=1.0,<2", ["1.0.0", "1.4.2", "1.99.99"], ["0.9.9", "2.0.0", "2.0.0-rc.1", "1.5.0-beta"]),
    (">=1.0 <2", ["1.0.0", "1.9.0"], ["2.0.0"]),
    (">= 1.0, < 2", ["1.0.0"], ["2.0.0"]),
    ("^1.2", ["1.2.0", "1.9.3"], ["1.1.9", "2.0.0"]),
    ("^1.2.3", ["1.2.3", "1.3.0"], ["1.2.2", "2.0.0"]),
    ("^0.2.3", ["0.2.3", "0.2.9"], ["0.3.0", "0.2.2"]),
    ("^0.0.3", ["0.0.3"], ["0.0.4", "0.0.2"]),
    ("^0.0", ["0.0.0", "0.0.9"], ["0.1.0"]),
    ("~1.2", ["1.2.0", "1.2.9"], ["1.3.0", "1.1.0"]),
    ("~1.2.3", ["1.2.3", "1.2.10"], ["1.3.0", "1.2.2"]),
    ("~1", ["1.0.0", "1.9.9"], ["2.0.0"]),
    ("~=1.2", ["1.2.0", "1.9.0"], ["2.0.0", "1.1.0"]),
    ("~=1.2.3", ["1.2.3", "1.2.9"], ["1.3.0"]),
    ("1.2.3", ["1.2.3"], ["1.2.4"]),
    ("==1.2.3", ["1.2.3", "1.2.3+build"], ["1.2.4"]),
    ("1.2", ["1.2.0", "1.2.7"], ["1.3.0"]),
    ("1.x", ["1.0.0", "1.8.1"], ["2.0.0", "0.9.0"]),
    ("1.2.*", ["1.2.5"], ["1.3.0"]),
    ("*", ["0.0.1", "9.9.9"], ["1.0.0-rc.1"]),
    (">1.2", ["1.3.0"], ["1.2.9"]),
    (">1.2.3", ["1.2.4"], ["1.2.3"]),
    ("<=1.2", ["1.2.9", "0.1.0"], ["1.3.0"]),
    ("<=1.2.3", ["1.2.3"], ["1.2.4"]),
    (">=1.0.0, !=1.3.0", ["1.2.0", "1.4.0"], ["1.3.0"]),
    ("^1 || ^3", ["1.5.0", "3.0.0"], ["2.0.0", "4.0.0"]),
    (">=2.0.0-rc.1", ["2.0.0-rc.1", "2.0.0-rc.2", "2.0.0", "3.0.0"], ["2.0.0-beta", "2.1.0-rc.1"]),
]


@pytest.mark.parametrize("spec, inside, outside", RANGES)
def test_ranges(spec, inside, outside):
    r = VersionRange.parse(spec)
    for v in inside:
        assert v in r, f"{v} should satisfy {spec}"
    for v in outside:
        assert v not in r, f"{v} should not satisfy {spec}"


@pytest.mark.parametrize("bad, says", [
    ("", "it is empty"), (">=1..0", "is not a version"), ("^", "is not a version"), ("1.0 ||", "empty alternative"),
    (">*", "nothing is above"), ("!=1.2", "needs a full version"), ("~=1", "at least major.minor"),
    ("banana", "is not a version"), ("1.2-rc.1", "needs a full version"),
])
def test_bad_ranges_say_how_to_write_one(bad, says):
    with pytest.raises(VersionRangeError) as info:
        VersionRange.parse(bad)
    assert says in str(info.value)
    assert info.value.code == "E191"


def test_check_version_points_at_the_manifest_version():
    pack = load_pack(MINI)
    check_pack_version(pack, ">=1.0,<2")
    check_pack_version(pack, None)
    with pytest.raises(PackVersionError) as info:
        check_pack_version(pack, "^2")
    err = info.value
    assert isinstance(err, PackError)
    assert str(err).splitlines()[0].endswith("is outside the required version range ^2")
    p = err.problems[0]
    assert (p.code, p.pointer, p.line, p.col) == ("E190", "/version", 4, 10)
    assert p.file.endswith("mini-1.0/pack.yaml")
    assert p.message == "mini 1.0.0 is outside the required version range ^2"


def test_load_pack_require():
    assert load_pack(MINI, require="~1.0").version == "1.0.0"
    with pytest.raises(PackVersionError):
        load_pack(MINI, require=">=1.1")


# -- resolving --------------------------------------------------------------

def test_resolve_directory_manifest_and_bundled():
    assert resolve_pack(None) == rules_dir()
    assert resolve_pack(MINI) == MINI
    assert resolve_pack(str(MINI / "pack.yaml")) == MINI
    assert resolve_pack(str(MINI)) == MINI


def test_resolve_missing_directory_is_clear():
    with pytest.raises(PackNotFound, match=r"no rule pack at .*no-such-dir: no such directory"):
        resolve_pack("./no-such-dir")


def test_bundled_pack_is_advertised_through_the_entry_point_group():
    eps = [ep for ep in importlib.metadata.entry_points(group=GROUP) if ep.name == "cleo-en"]
    assert eps and eps[0].value == "cleo_rules.bundled:pack_path"
    infos = [p for p in available_packs() if p.name == "cleo-en"]
    assert len(infos) == 1
    info = infos[0]
    assert (info.origin, info.entry_point, info.locale) == ("entry point", "cleo-en", "en")
    assert info.path.resolve() == rules_dir().resolve()
    assert resolve_pack("cleo-en").resolve() == rules_dir().resolve()
    assert load_pack("cleo-en", require="^1").name == "cleo-en"


def test_unknown_name_lists_what_is_installed():
    with pytest.raises(PackNotFound) as info:
        resolve_pack("acme-xx")
    assert "no rule pack named 'acme-xx'" in str(info.value)
    assert "cleo-en" in str(info.value)


# -- a pack installed by another distribution (fake entry points) ------------

@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A module on sys.path that advertises packs the ways a distribution can.

    Real :class:`importlib.metadata.EntryPoint` objects are injected into the
    group, so resolution, loading and listing run exactly as for an
    installed distribution, without installing one into the environment.
    """
    acme = tmp_path / "acme_rules"
    (acme / "pack").mkdir(parents=True)
    for f in MINI.iterdir():
        shutil.copy(f, acme / "pack" / f.name)
    text = (acme / "pack" / "pack.yaml").read_text().replace("pack: mini", "pack: acme-en")
    (acme / "pack" / "pack.yaml").write_text(text)
    (acme / "__init__.py").write_text(textwrap.dedent("""\
        from pathlib import Path
        HERE = Path(__file__).parent

        def pack_path():
            return HERE / "pack"

        PACK_DIR = str(HERE / "pack")

        def not_a_dir():
            return 42
    """))
    (acme / "pack" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("acme_rules", "acme_rules.pack"):  # each test has its own copy on disk
        monkeypatch.delitem(sys.modules, name, raising=False)
    real = importlib.metadata.entry_points
    extra = [
        importlib.metadata.EntryPoint("acme-en", "acme_rules:pack_path", GROUP),
        importlib.metadata.EntryPoint("acme-str", "acme_rules:PACK_DIR", GROUP),
        importlib.metadata.EntryPoint("acme-pkg", "acme_rules.pack", GROUP),
        importlib.metadata.EntryPoint("acme-broken", "acme_missing_module:pack_path", GROUP),
        importlib.metadata.EntryPoint("acme-odd", "acme_rules:not_a_dir", GROUP),
    ]

    def entry_points(**kw):
        found = real(**kw)
        if kw.get("group") == GROUP:
            return list(found) + extra
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return acme / "pack"


def test_installed_pack_loads_by_entry_point_name(installed):
    assert resolve_pack("acme-en") == installed
    pack = load_pack("acme-en", require=">=1,<2")
    assert (pack.name, pack.version, pack.path) == ("acme-en", "1.0.0", installed)


def test_entry_point_may_name_a_path_or_a_package(installed):
    assert resolve_pack("acme-str") == installed
    assert resolve_pack("acme-pkg") == installed


def test_listing_reports_broken_entry_points_without_failing(installed):
    infos = {p.entry_point: p for p in available_packs()}
    assert infos["acme-en"].name == "acme-en" and infos["acme-en"].error is None
    assert "cannot be loaded: ModuleNotFoundError" in infos["acme-broken"].error
    assert "gave int, not a pack directory" in infos["acme-odd"].error
    assert infos["cleo-en"].error is None
    with pytest.raises(PackNotFound, match="acme-broken.*cannot be loaded"):
        resolve_pack("acme-broken")


def test_a_name_is_also_found_by_the_manifest_pack_name(installed, monkeypatch):
    # the entry point is called acme-en; its manifest could call the pack anything
    text = (installed / "pack.yaml").read_text().replace("pack: acme-en", "pack: acme-english")
    (installed / "pack.yaml").write_text(text)
    assert resolve_pack("acme-english") == installed


def test_two_distributions_claiming_one_name_is_an_error(installed, monkeypatch):
    current = importlib.metadata.entry_points

    def doubled(**kw):
        found = list(current(**kw))
        if kw.get("group") == GROUP:
            found.append(importlib.metadata.EntryPoint("acme-en", "acme_rules:PACK_DIR", GROUP))
        return found

    monkeypatch.setattr(importlib.metadata, "entry_points", doubled)
    with pytest.raises(PackNotFound, match="advertised by 2 entry points"):
        resolve_pack("acme-en")


def test_pack_info_of_a_directory_without_manifest(tmp_path):
    info = discovery.pack_info(tmp_path)
    assert info.error == f"pack.yaml not found in {display(tmp_path)}"

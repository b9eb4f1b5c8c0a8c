"""What .ci/run checks of a team pack built on cleo-en, from the wheel installed in a fresh venv (issues 24, 33).

Run with that venv's Python, outside the checkout. The designer's first hour: `cleo-rules init acme` writes a pack
that extends cleo-en; the team lists the rule ids (`cleo-rules rules`), disables one cleo-en rule, takes the
setting the template's comment suggests, adds one correction with natural request forms ("Check the other
branch.", which is no follow-up out of context, and one given a history, which is) and puts in the follow-up rule
init wrote as a commented example, builds its corpus and checks it, all with the installed command: `rules` names each rule's pack and marks the disabled one, check exits 0 and runs the team's corpus and cleo-en's (the disabled rule's cases
skipped and counted), classify shows each change, and a PackManager serving the pack reloads it when the team's own
file changes. .ci/wheel_extras.py serves the same pack in the playground (:func:`write_team`). Exits non-zero,
saying what failed, otherwise.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

CLI = [str(Path(sys.executable).with_name("cleo-rules"))]
HISTORY = "Compare the two van insurance quotes"
#: twelve words, every one in cleo-en's vocabulary: a follow-up, unless the pack takes at most eleven
TWELVE = "Yes, great, thanks a lot, sounds perfect, thank you so very much."
DISABLED = "correction.change-of-mind"
#: a request form of the team's correction: a request, not a correction, though out of context it is substantive
REQUEST = "Check the other branch."
#: the follow-up rule of the commented example in the follow_ups.yaml init writes, and a message it takes
FOLLOW_UP = "follow_up.walk-through"
WALK = "Can you walk us through them, please?"
CORRECTION = r"""  - id: correction.out-of-stock
    description: The user reports that what was offered is out of stock.
    pattern: '\b(?:that|this|it)(?: one)? (?:is|was|went) out of stock\b'
    examples: ["That one is out of stock.", "It went out of stock yesterday."]
    counterexamples: ["Which suppliers have the blue van tyres out of stock this week?"]
    request_forms:
      - "Check the other branch."
      - {message: "Show me the second one, please.", history: ["Compare the two van insurance quotes"]}
    generate:
      positive: ["{That|This|It}{| one} {is|was} out of stock{| already| again}{.|!}"]
      negative: ["Which {suppliers|shops} have the {blue|winter} tyres out of stock {this week|today}?"]
      request: ["{Check|Try} the other {branch|shop|supplier}{.|, please.}"]
"""


def check(condition, what):
    if not condition:
        sys.exit(f"team pack: {what}")


def run(*args, cwd=None, rc=0, stdin=None) -> str:
    done = subprocess.run(CLI + list(args), cwd=cwd, capture_output=True, text=True, input=stdin)
    check(done.returncode == rc, f"cleo-rules {' '.join(args)} exited {done.returncode}, not {rc}:\n"
                                 f"{done.stdout}{done.stderr}")
    return done.stdout


def write_team(root: Path) -> Path:
    """``cleo-rules init`` in ``root``, then the team's changes: disable a rule, change a setting, add a correction
    and the follow-up rule of init's commented example; its corpus built. Returns the pack's ``rules/``."""
    run("init", "acme", cwd=root)
    rules = root / "acme" / "rules"
    listed = json.loads(run("rules", "--json", cwd=root / "acme"))["rules"]
    check(any(r["id"] == DISABLED and r["pack"] == "cleo-en" and not r["disabled"] for r in listed),
          f"cleo-rules rules did not list {DISABLED} of cleo-en")
    manifest = (rules / "pack.yaml").read_text(encoding="utf-8")
    check("  - pack: cleo-en" in manifest and "disable: []" in manifest, f"init wrote no extending pack:\n{manifest}")
    suggested = re.findall(r"(?m)^settings: \{\} +#.* e\.g\. (\{max_follow_up_words: (\d+)\})$", manifest)
    check(len(suggested) == 1 and int(suggested[0][1]) < len(TWELVE.split()),
          f"the template suggests no max_follow_up_words under twelve:\n{manifest}")
    manifest = re.sub(r"(?m)^disable: \[\].*$", f"disable: [{DISABLED}]", manifest)
    manifest = re.sub(r"(?m)^settings: \{\}.*$", f"settings: {suggested[0][0]}", manifest)
    (rules / "pack.yaml").write_text(manifest, encoding="utf-8")
    corrections = (rules / "corrections.yaml").read_text(encoding="utf-8")
    (rules / "corrections.yaml").write_text(corrections.replace("rules: []", "rules:\n" + CORRECTION),
                                            encoding="utf-8")
    follow_ups = (rules / "follow_ups.yaml").read_text(encoding="utf-8")
    example = [line[4:] for line in follow_ups.splitlines() if line.startswith("#   ")]
    check(bool(example) and example[0] == f"- id: {FOLLOW_UP}", f"init wrote no example follow-up:\n{follow_ups}")
    (rules / "follow_ups.yaml").write_text(
        follow_ups.replace("rules: []", "rules:\n" + "".join(f"  {line}\n" for line in example)), encoding="utf-8")
    run("corpus", "build", cwd=root / "acme")
    return rules


def classify(messages: list[str], *args: str) -> list[dict]:
    """Each message's decision, with HISTORY before it: one ``classify --jsonl`` for them all."""
    lines = "".join(json.dumps({"message": m, "history": [HISTORY]}) + "\n" for m in messages)
    return [json.loads(line) for line in run("classify", "--jsonl", *args, stdin=lines).splitlines()]


def main():
    started = time.monotonic()
    rules = write_team(Path.cwd())
    out = run("check", cwd=rules.parent)
    print(out, end="")
    lines = out.splitlines()
    check(re.match(r"pack: acme 0\.1\.0 \(\w+\) at rules \(\./rules\), on cleo-en [\d.]+ \(\w+\)$", lines[0]),
          "check did not name the pack and its base")
    check(any(line.startswith("built on: cleo-en ") and line.endswith("at <installed pack cleo-en>")
              for line in lines), "check did not name the installed base")
    check(f"disabled: {DISABLED} of cleo-en (by acme)" in lines, "check did not say which rule is disabled")
    check(any(re.match(r"corpus ok: [\d,]+ cases, all passed; .*2 rules, all covered both ways", line)
              for line in lines), "the team's corpus did not pass, covering its two rules")
    requests = [c for c in (rules.parent / "corpus" / "generated" / "correction.out-of-stock.yaml").read_text(
        encoding="utf-8").splitlines() if '/r-' in c]
    check(bool(requests) and all('"not_kind": "correction"' in c for c in requests),
          f"the generated request forms are not judged as no corrections: {requests[:3]}")
    check(any(line.startswith("corpus of cleo-en ok: ") for line in lines), "cleo-en's corpus did not pass")
    check(any(re.match(rf"  skipped: [\d,]+ cases of {DISABLED} \(disabled by acme\)$", line) for line in lines),
          "the disabled rule's cases were not counted as skipped")
    check("site-packages" not in out, "check showed a path into site-packages")

    listing = run("rules", cwd=rules.parent)
    table = listing.splitlines()
    head = next((i for i, line in enumerate(table) if line.startswith("ID ")), len(table))
    rows = {line.split()[0]: line.split(maxsplit=4) for line in table[head + 1:-1]}
    check(rows.get(DISABLED, [])[2:4] == ["cleo-en", "disabled"], f"cleo-rules rules did not mark {DISABLED}")
    check(rows.get(FOLLOW_UP, [])[1:3] == ["follow_up", "acme"] and rows.get("vocab.nod", [])[2] == "cleo-en",
          f"cleo-rules rules did not name each rule's pack:\n{listing}")
    check("site-packages" not in listing and " at <installed pack cleo-en>" in listing,
          "cleo-rules rules showed a path into site-packages")
    print(f"rules: {len(rows)} listed, {DISABLED} disabled, {FOLLOW_UP} of acme")

    messages = ["That one is out of stock.", "Scratch that, the other one.", TWELVE, WALK]
    (stock, scratch, twelve, walk), bundled = classify(messages, "--pack", str(rules)), classify(messages)
    alone = json.loads(run("classify", "--json", "--pack", str(rules), REQUEST))
    check(alone["kind"] == "substantive", f"{REQUEST!r} is no substantive request out of context: {alone}")
    check(stock["rule"] == "correction.out-of-stock" and bundled[0]["kind"] == "substantive",
          f"the new correction does not fire: {stock}")
    check(bundled[1]["rule"] == DISABLED and scratch["kind"] != "correction", f"the disabled rule still fires: {scratch}")
    check(bundled[2]["kind"] == "follow_up" and twelve["kind"] == "substantive",
          f"max_follow_up_words: 11 did not take effect: {twelve}")
    check(walk["rule"] == FOLLOW_UP and bundled[3]["kind"] == "substantive",
          f"the team's follow-up does not fire: {walk}")
    check(stock["pack"] == "acme" and bundled[0]["pack"] == "cleo-en", "classify --jsonl did not name the packs")
    print(f"classify: {stock['rule']}; {DISABLED} gives way to {scratch['kind']} by {scratch['rule']}; twelve words "
          f"are {twelve['kind']}; the request form {REQUEST!r} is {alone['kind']}, and passes")

    from cleo_rules.runtime import PackManager

    manager = PackManager(rules)
    check(manager.classify("That one is sold out.").kind == "substantive", "sold out is a correction already")
    path = rules / "corrections.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("out of stock\\b'", "(?:out of stock|sold out)\\b'"),
                    encoding="utf-8")
    manager.poll()
    check(manager.poll() and manager.reloads == 1, f"the change was not loaded: {manager.last_error}")
    check(manager.classify("That one is sold out.").rule == "correction.out-of-stock", "the reloaded pack differs")
    check([b["name"] for b in manager.status()["bases"]] == ["cleo-en"], "the manager did not name the base")
    print(f"hot reload: {manager.pack.name} {manager.pack.version} ({manager.pack.content_hash}) after a change to "
          f"{os.path.relpath(path)}")
    print(f"team pack built on cleo-en: {time.monotonic() - started:.1f} s")

    # The integrator's first hour, the README's LangChain example as written, needs the [langchain] extra, which
    # this core venv does not have: .ci/wheel_extras.py runs it in the extras venv (readme_examples), with numpy
    # unimportable, as a LangChain user without numpy has it.


if __name__ == "__main__":
    main()

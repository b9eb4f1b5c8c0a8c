"""What .ci/run checks in the wheel installed with its serve, langchain and llama-index extras.

Run with that venv's Python, outside the checkout: the playground answers on loopback (started by
``cleo-rules playground --port 0``, which prints the port it got, and stopped by its pid), and shows
a team pack built on cleo-en (.ci/team_pack.py) with the pack each rule comes from, and both
adapters shape the query they pass to a small in-memory retriever, and search nothing on a skipped
turn; the README's LangChain and LlamaIndex examples run as written. Exits non-zero, saying what failed, otherwise.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import cleo_rules

HISTORY = ["Which van insurer covers tools left in the van overnight?",
           {"role": "assistant", "content": "Two do: Brightline Commercial and Zego Van. Brightline is cheaper."}]
MESSAGE = "Yes, go with the second one."


def check(condition, what):
    if not condition:
        sys.exit(f"wheel with extras: {what}")


def fetch(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def ready(url) -> bool:
    try:
        return fetch(url + "readyz")[0] == 200
    except urllib.error.HTTPError:
        return False


def start_playground(*args, log=Path("playground.log")):
    """``cleo-rules playground --port 0 ARGS``, once it answers: ``(process, URL)``."""
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cleo_rules", "playground", "--port", "0", *args],
                                stdout=out, stderr=subprocess.STDOUT)
    deadline, url = time.monotonic() + 60, None
    while url is None and time.monotonic() < deadline:
        check(proc.poll() is None, f"the playground exited:\n{log.read_text()}")
        found = re.search(r"^playground: (http://127\.0\.0\.1:\d+/) ", log.read_text(), re.M)
        url = found.group(1) if found else None
        time.sleep(0.1)
    check(url is not None, f"the playground printed no loopback URL:\n{log.read_text()}")
    while not ready(url):  # it listens first, then loads the pack
        check(proc.poll() is None and time.monotonic() < deadline, f"the playground was not ready:\n{log.read_text()}")
        time.sleep(0.1)
    return proc, url


def playground(expected):
    proc, url = start_playground()
    try:
        status, page = fetch(url)
        check(status == 200 and b'src="/playground/playground.js"' in page, "GET / is not the page")
        for name in ("playground.js", "playground.css"):
            check(fetch(url + "playground/" + name)[0] == 200, f"/playground/{name} is not served")
        for name in ("docs.js", "swagger-ui-bundle.js", "swagger-ui.css", "LICENSE"):  # /docs: Swagger UI, installed
            check(fetch(url + "docs/" + name)[0] == 200, f"/docs/{name} is not served")
        status, body = fetch(url + "v1/classify", {"message": MESSAGE, "history": HISTORY})
        got = json.loads(body)
        check(status == 200 and (got["kind"], got["query"]) == (expected.kind, expected.query),
              f"/v1/classify answered {got}, not the library's {expected.kind} {expected.query!r}")
        print(f"playground: {url} serves the page; {got['kind']} {got['query']!r}")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(30)


def composed_playground():
    """The team pack built on cleo-en (.ci/team_pack.py) in the playground: which pack each rule comes from."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from team_pack import DISABLED, write_team

    rules = write_team(Path.cwd())
    proc, url = start_playground("--pack", str(rules), log=Path("playground-acme.log"))
    try:
        doc = json.loads(fetch(url + "v1/pack/rules")[1])
        packs = {rule["id"]: rule["pack"] for rule in doc["rules"]}
        check(packs.get("correction.out-of-stock") == "acme" and packs.get("vocab.nod") == "cleo-en"
              and DISABLED not in packs, f"/v1/pack/rules does not show the composition: {packs}")
        check([b["name"] for b in doc["bases"]] == ["cleo-en"] and [d["rule"] for d in doc["disabled"]] == [DISABLED],
              f"/v1/pack/rules does not name the base and the disabled rule: {doc['bases']}, {doc['disabled']}")
        status = json.loads(fetch(url + "v1/pack")[1])
        check(status["pack"] == "acme" and [b["name"] for b in status["bases"]] == ["cleo-en"], f"/v1/pack: {status}")
        got = json.loads(fetch(url + "v1/classify", {"message": "That one is out of stock."})[1])
        check(got["rule"] == "correction.out-of-stock", f"the playground's pack does not have acme's rule: {got}")
        print(f"playground: acme on cleo-en, {sum(p == 'acme' for p in packs.values())} rule of its own, "
              f"{DISABLED} disabled")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(30)


def langchain(expected):
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.retrievers import BaseRetriever

    from cleo_rules.integrations.langchain import CleoRulesRetriever

    class Base(BaseRetriever):
        asked: list = []

        def _get_relevant_documents(self, query, *, run_manager):
            self.asked.append(query)
            return [Document("Zego Van: tools covered overnight")]

    base = Base(asked=[])
    retriever = CleoRulesRetriever(base_retriever=base)
    docs = retriever.invoke([HumanMessage(HISTORY[0]), AIMessage(HISTORY[1]["content"]), HumanMessage(MESSAGE)])
    check(base.asked == [expected.query], f"langchain: the base retriever was asked {base.asked}")
    check(docs[0].metadata["cleo_rules"]["rule"] == expected.rule, "langchain: no decision in the metadata")
    check(retriever.invoke([HumanMessage("Thanks!")]) == [] and len(base.asked) == 1,
          "langchain: a skipped turn searched")
    print(f"langchain: asked {base.asked[0]!r}; a skipped turn asked nothing")


def llama_index(expected):
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.schema import NodeWithScore, TextNode

    from cleo_rules.integrations.llama_index import CleoRulesRetriever

    class Base(BaseRetriever):
        def __init__(self):
            super().__init__()
            self.asked = []

        def _retrieve(self, query_bundle):
            self.asked.append(query_bundle.query_str)
            return [NodeWithScore(node=TextNode(text="Zego Van: tools covered overnight"), score=1.0)]

    base = Base()
    retriever = CleoRulesRetriever(base)
    nodes = retriever.retrieve_chat([ChatMessage(role="user", content=HISTORY[0]),
                                     ChatMessage(role="assistant", content=HISTORY[1]["content"]),
                                     ChatMessage(role="user", content=MESSAGE)])
    check(base.asked == [expected.query], f"llama-index: the base retriever was asked {base.asked}")
    check(nodes[0].node.metadata["cleo_rules"]["rule"] == expected.rule, "llama-index: no decision in the metadata")
    check(retriever.retrieve("Thanks!") == [] and len(base.asked) == 1, "llama-index: a skipped turn searched")
    print(f"llama-index: asked {base.asked[0]!r}; a skipped turn asked nothing")


def readme_examples():
    """The README's LangChain and LlamaIndex examples as written, each in a fresh interpreter of this venv, outside
    the checkout; the LangChain one with numpy made unimportable, as with the [langchain] extra alone."""
    import tempfile

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for heading, no_numpy in (("### LangChain", True), ("### LlamaIndex", False)):
        code = re.search(r"```python\n(.*?)```", readme[readme.index(heading):], re.S).group(1)
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "example.py"
            script.write_text(code, encoding="utf-8")
            guard = "import sys; sys.modules['numpy'] = None; " if no_numpy else ""
            run = f"{guard}import runpy; runpy.run_path({str(script)!r}, run_name='__main__')"
            done = subprocess.run([sys.executable, "-c", run], cwd=tmp, capture_output=True, text=True, timeout=120)
        check(done.returncode == 0 and done.stdout.startswith("follow_up "),
              f"README {heading[4:]} example: exit {done.returncode}\n{done.stdout}{done.stderr}")
        print(f"README {heading[4:]} example: {done.stdout.strip()}")


def main():
    check("site-packages" in cleo_rules.__file__, f"cleo_rules comes from {cleo_rules.__file__}, not the wheel")
    expected = cleo_rules.load_pack().classify(MESSAGE, HISTORY)
    check(expected.query not in (None, MESSAGE), f"the library did not shape {MESSAGE!r}")
    playground(expected)
    composed_playground()
    langchain(expected)
    llama_index(expected)
    readme_examples()
    check("torch" not in sys.modules, "torch was imported")


if __name__ == "__main__":
    main()

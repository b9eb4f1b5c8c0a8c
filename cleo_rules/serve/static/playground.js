// The cleo-rules playground: a conversation in, each user turn's decision out, live as the pack changes.
//
// Everything comes from the service that serves this page: /v1/classify/batch decides every user turn
// (one pack answers the whole conversation), /v1/pack/rules gives each rule's file and line, /v1/pack is
// polled for the live loop (a new hash runs the conversation again; a refused pack's problems are shown),
// /v1/tenants/{t}/recall shows what memory recalls, /v1/pack/regressions turns a turn into a case, /v1/explain
// gives a turn's near misses when its details are opened. With --writable-pack the pack's own files are edited in
// the page (editor.js): an edit that checks is written and the turns run again at once.

import { createEditor } from "./editor.js";

const KINDS = ["skip", "correction", "follow_up", "substantive"];
const SAMPLE = [
  "User: Which van insurer covers tools left in the van overnight?",
  "Assistant: Two do: Brightline Commercial and Zego Van. Brightline is cheaper.",
  "User: Yes, go with the second one.",
  "Assistant: Zego Van it is. Their excess is 250 pounds.",
  "User: We tried that one already.",
  "User: Thanks!",
  "User: How should we price the new sourdough loaf at the Leeds shop?",
  "Assistant: Most bakeries there charge 4 to 5 pounds for a large sourdough.",
  "User: What about the smaller one?",
].join("\n");
const IGNORED_ROLES = new Set(["system", "tool", "function", "developer"]);

const params = new URLSearchParams(location.search);
const state = {
  key: sessionStorage.getItem("cleo-key") || "",
  pollMs: Math.max(200, 1000 * (Number(params.get("poll")) || 1)),
  status: null,       // the last /v1/pack
  memory: false,      // whether the service has memory (from /readyz)
  rules: { hash: null, byId: new Map(), composed: false },
  last: null,         // {hash, turns, results}: the last run
  running: null,      // the run in progress (a promise)
  runs: 0,
  problemsShown: "",
  editor: null,       // the rule file editor, with --writable-pack
  asking: null,       // while the page asks for a key: the promise of the answer
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("data-")) node.dataset[name.slice(5).replace(/-(\w)/g, (_, c) => c.toUpperCase())] = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// -- talking to the service -----------------------------------------------------------------------

class ProblemError extends Error {
  constructor(status, problem) {
    super(problem && problem.detail ? `${problem.title}: ${problem.detail}` : `the service answered ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

async function api(path, options = {}) {
  const { method = "GET", body, text, headers: extra = {} } = options;
  const headers = { ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (text !== undefined) headers["Content-Type"] = "text/plain; charset=utf-8";
  const key = state.key;
  if (key) headers.Authorization = `Bearer ${key}`;
  const sent = text !== undefined ? text : body === undefined ? undefined : JSON.stringify(body);
  const response = await fetch(path, { method, headers, body: sent });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (response.status === 401) {
    // a service started with --keys: ask for the key (once for every request refused meanwhile), then send again
    if (key === state.key) await askForKey(key, data);
    return api(path, options);
  }
  if (!response.ok) throw new ProblemError(response.status, data);
  return data;
}

/** Show the key form until a key is entered; every request refused meanwhile waits for the same answer. */
function askForKey(refused, problem) {
  if (state.asking) return state.asking;
  const why = problem && problem.detail ? ` (${problem.detail})` : "";
  $("key-ask-message").textContent = refused
    ? `The key was not accepted${why}. Enter the key again.`
    : "This playground was started with --keys: enter your key to use it.";
  const box = $("key-ask");
  const input = $("key-ask-input");
  box.hidden = false;
  input.value = "";
  input.focus();
  state.asking = new Promise((resolve) => {
    const form = $("key-ask-form");
    const use = (event) => {
      event.preventDefault();
      const entered = input.value.trim();
      if (!entered) return;
      form.removeEventListener("submit", use);
      useKey(entered);
      box.hidden = true;
      state.asking = null;
      resolve();
    };
    form.addEventListener("submit", use);
  });
  return state.asking;
}

/** Send ``key`` from now on, and keep it for this tab. */
function useKey(key) {
  state.key = key;
  sessionStorage.setItem("cleo-key", key);
  $("key").value = key;
}

// -- the conversation -----------------------------------------------------------------------------

/** The editor's text as turns: [{role, content, item}], `item` being what the history sends. */
export function parseConversation(text) {
  const trimmed = text.trim();
  if (!trimmed) return [];
  if (trimmed.startsWith("[")) {
    let data;
    try {
      data = JSON.parse(trimmed);
    } catch (error) {
      throw new SyntaxError(`The JSON history cannot be read: ${error.message}`);
    }
    const turns = [];
    data.forEach((item, i) => {
      if (typeof item === "string") {
        turns.push({ role: "user", content: item, item });
      } else if (item && typeof item === "object" && IGNORED_ROLES.has(item.role)) {
        // not a turn of the conversation: the classifier passes it over too
      } else if (item && typeof item === "object" && (item.role === "user" || item.role === "assistant")
                 && typeof item.content === "string") {
        turns.push({ role: item.role, content: item.content, item: { role: item.role, content: item.content } });
      } else {
        throw new SyntaxError(`history[${i}] must be a string or {"role": "user" | "assistant", "content": "…"}`);
      }
    });
    return turns;
  }
  const turns = [];
  const prefix = /^\s*(user|assistant)\s*:\s?(.*)$/i;
  text.split(/\r?\n/).forEach((line, n) => {
    const match = prefix.exec(line);
    if (match) {
      const role = match[1].toLowerCase();
      turns.push({ role, content: match[2], item: null });
    } else if (line.trim()) {
      if (!turns.length) throw new SyntaxError(`Line ${n + 1}: start the first turn with "User:" or "Assistant:".`);
      turns[turns.length - 1].content += "\n" + line;
    }
  });
  for (const turn of turns) {
    turn.item = turn.role === "user" ? turn.content : { role: "assistant", content: turn.content };
  }
  return turns;
}

/** Where a query part came from, as cleo_rules.decision.Part.where says it. */
function partWhere(part) {
  if (part.source === "message") return "the message";
  const span = part.span ? `, ${part.span[0]}..${part.span[1]}` : "";
  return `${part.source} turn ${part.turn}${span}`;
}

/** The message with the rule's match marked; `span` counts code points, as Python does. */
function markedMessage(message, span) {
  const node = el("span", { class: "message" });
  if (!span) {
    node.textContent = message;
    return node;
  }
  const chars = Array.from(message);
  node.append(chars.slice(0, span[0]).join(""), el("mark", { text: chars.slice(span[0], span[1]).join("") }),
              chars.slice(span[1]).join(""));
  return node;
}

/** The query exactly as searched, each part's text marked with the part it is. */
function queryView(decision) {
  if (decision.query === null) {
    return el("p", { class: "no-search", text: "No search was made for this turn." });
  }
  const pre = el("pre", { class: "query", "aria-label": "query searched" });
  let at = 0;
  const query = decision.query;
  for (const part of decision.parts || []) {
    const found = part.text ? query.indexOf(part.text, at) : -1;
    if (found < 0) continue;
    if (found > at) pre.append(query.slice(at, found));
    pre.append(el("span", { class: `part part-${part.name}`, title: `${part.name}: ${partWhere(part)}`,
                            text: part.text }));
    at = found + part.text.length;
  }
  if (at < query.length) pre.append(query.slice(at));
  const legend = el("ul", { class: "parts", "aria-label": "where the query's parts came from" },
    (decision.parts || []).map((part) => el("li", { class: `part-label part-${part.name}` },
      el("span", { class: "part-name", text: part.name }), " ",
      el("span", { class: "part-from", text: part.source === "message" ? "as typed" : `from ${partWhere(part)}` }))));
  return el("div", { class: "query-box" }, pre, legend);
}

// -- rules and their source ----------------------------------------------------------------------

async function ensureRules(hash) {
  if (state.rules.hash === hash && state.rules.byId.size) return;
  const data = await api("/v1/pack/rules");
  state.rules = { hash: data.hash, byId: new Map(data.rules.map((rule) => [rule.id, rule])),
                  composed: Boolean((data.bases || []).length) };
  showComposition(data);
}

/** The packs a pack built on others is made of: each with its rules, and the rules it leaves out (read only). */
function showComposition(data) {
  const bases = data.bases || [];
  $("composition").hidden = !bases.length;
  if (!bases.length) {
    $("composition-list").replaceChildren();
    return;
  }
  const count = (name) => data.rules.filter((rule) => rule.pack === name).length;
  const leftOut = (list, what) => list.map((c) => el("span", { class: "left-out", "data-rule": c.rule,
    text: `${c.rule} of ${c.of}: ${what} by ${c.by}` }));
  $("composition-list").replaceChildren(
    ...bases.map((base) => el("li", { class: "composition-pack", "data-pack": base.name },
      el("span", { class: "rule-pack", text: `${base.name} ${base.version}` }), ` (${base.hash}): `,
      `${count(base.name)} rules`)),
    el("li", { class: "composition-pack", "data-pack": data.pack },
      el("span", { class: "rule-pack", text: `${data.pack} ${data.version}` }), ` (${data.hash}), this pack: `,
      `${count(data.pack)} rules of its own`,
      leftOut(data.disabled || [], "disabled"), leftOut(data.replaced || [], "replaced")));
}

function ruleEnd(rule) {
  // the rule's block: from its line to the line before the next rule of the same file
  let end = Infinity;
  for (const other of state.rules.byId.values()) {
    if (other.file === rule.file && other.line > rule.line) end = Math.min(end, other.line - 1);
  }
  return Math.min(end, rule.line + 39);
}

async function showSource(rule, box) {
  if (!box.hidden) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.textContent = "loading…";
  try {
    const data = await api(`/v1/pack/source?file=${encodeURIComponent(rule.file)}`);
    const last = Math.min(ruleEnd(rule), data.lines.length);
    const label = `${rule.shown || rule.file} lines ${rule.line} to ${last}`;
    const pre = el("pre", { class: "source", "aria-label": label });
    for (let n = rule.line; n <= last; n += 1) {
      pre.append(el("span", { class: n === rule.line ? "src-line src-rule" : "src-line" },
                    el("span", { class: "src-no", text: String(n) }), data.lines[n - 1] ?? ""), "\n");
    }
    box.replaceChildren(pre);
  } catch (error) {
    box.replaceChildren(el("p", { class: "error", text: error.message }));
  }
}

// -- one turn -------------------------------------------------------------------------------------

function changesOf(old, now) {
  if (!old || old.error || now.error) return [];
  return ["kind", "rule", "query"].filter((field) => old[field] !== now[field]);
}

function diffTable(old, now, changed) {
  const row = (field) => el("tr", { class: changed.includes(field) ? "differs" : null },
    el("th", { scope: "row", text: (changed.includes(field) ? "! " : "") + field }),
    el("td", {}, el("span", { class: "value", text: old[field] ?? "—" })),
    el("td", {}, el("span", { class: "value", text: now[field] ?? "—" })));
  return el("table", { class: "diff", "aria-label": "what changed with the new pack" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "" }),
      el("th", { scope: "col", text: `old pack (${old.pack_hash})` }),
      el("th", { scope: "col", text: `new pack (${now.pack_hash})` }))),
    el("tbody", {}, ["kind", "rule", "query"].map(row)));
}

function resultList(results, empty) {
  if (results === null) return el("p", { class: "no-search", text: "No search was made for this turn." });
  if (!results.length) return el("p", { class: "help", text: empty });
  return el("ol", { class: "recalled" }, results.map((r) => el("li", {},
    el("span", { class: "r-title", text: r.title }), " ",
    el("span", { class: "r-date", text: r.date }), " ",
    el("span", { class: "r-score", text: r.score.toFixed(2) }))));
}

async function fillRecall(result, box) {
  const tenant = $("tenant").value.trim();
  box.replaceChildren(el("p", { class: "help", text: `recalling from ${tenant}…` }));
  try {
    const data = await api(`/v1/tenants/${encodeURIComponent(tenant)}/recall`, {
      method: "POST",
      body: { message: result.message, history: result.history, k: Number($("k").value) || 3 },
    });
    box.replaceChildren(
      el("div", { class: "recall-col recall-shaped" }, el("h4", { text: "Recalled for the shaped query" }),
         resultList(data.shaped, "nothing above the score floor")),
      el("div", { class: "recall-col recall-raw" }, el("h4", { text: "The message as typed would recall" }),
         resultList(data.raw, "nothing above the score floor")));
  } catch (error) {
    box.replaceChildren(el("p", { class: "error", text: error.message }));
  }
}

/** The near misses of a turn (POST /v1/explain): the rules whose words are in it that did not take it, each with
 * the span it tested, what it needs and what the message lacks; the reason's code and the walk's own words are kept
 * in a tooltip. */
async function fillNearMisses(result, box) {
  box.dataset.state = "loading";
  box.replaceChildren(el("p", { class: "help", text: "asking which rules nearly took it…" }));
  try {
    const body = { message: result.message, history: result.history };
    const data = await api("/v1/explain", { method: "POST", body });
    const misses = data.near_misses || [];
    box.replaceChildren(
      el("h4", { text: misses.length ? "Near misses: rules whose words are in the message, what each needs and what "
                                       + "the message lacks"
                                     : "Near misses: none (no rule's words are in the message)" }),
      misses.length ? el("ul", { class: "near-miss-list" }, misses.map((n) => el("li", {
        class: "near-miss", "data-rule": n.rule || "", "data-reason": n.reason, "data-setting": n.setting || "",
        title: `${n.setting ? `${n.reason} (${n.setting})` : n.reason}: ${n.detail}`,
      }, el("span", { class: "nm-rule", text: n.rule || `(${n.stage} test)` }),
         n.matched !== null ? el("span", { class: "nm-tested" }, " tested ", el("q", { class: "nm-matched",
                                                                                      text: n.matched })) : null,
         el("div", { class: "nm-needs" }, el("span", { class: "nm-label", text: "needs " }), n.needs),
         el("div", { class: "nm-lacks" }, el("span", { class: "nm-label", text: "lacks " }), n.lacks)))) : null);
    box.dataset.state = "done";
  } catch (error) {
    box.replaceChildren(el("p", { class: "error", text: error.message }));
    box.dataset.state = "error";
  }
}

function saveBox(result) {
  const decision = result.decision;
  const select = el("select", { class: "expect", "aria-label": "expected kind" },
    KINDS.map((kind) => el("option", { value: kind, text: kind, selected: kind === decision.kind })));
  const button = el("button", { type: "button", class: "save", text: "Save as regression" });
  const yaml = el("pre", { class: "regression-yaml", hidden: true });
  const said = el("p", { class: "save-status", role: "status" });
  button.addEventListener("click", async () => {
    const writable = Boolean(state.status && state.status.regressions && state.status.regressions.writable);
    button.disabled = true;
    try {
      const saved = await api("/v1/pack/regressions", {
        method: "POST",
        body: { message: result.message, history: result.history, expect: select.value, write: writable },
      });
      yaml.textContent = saved.yaml;
      yaml.hidden = false;
      const open = saved.open
        ? " It is open: the pack does not get it right yet, so `check` reports it without failing until it passes,"
          + " then asks for it to be closed."
        : "";
      said.textContent = saved.written
        ? `Appended to ${saved.file} as ${saved.id}.${open}`
        : `Copy this case under cases: in ${saved.file} (this service does not write it: start it with --writable-corpus).`;
    } catch (error) {
      if (error.problem && error.problem.yaml) {
        yaml.textContent = error.problem.yaml;
        yaml.hidden = false;
      }
      said.textContent = error.message;
    } finally {
      button.disabled = false;
    }
  });
  return el("div", { class: "save-box" },
    el("label", { class: "expect-label" }, "Expected kind ", select), " ", button, said, yaml);
}

function userTurn(result, old) {
  const d = result.decision;
  if (d.error) {
    return el("li", { class: "turn turn-user turn-error", "data-index": result.index },
      el("p", { class: "error", text: `User turn ${result.userTurn}: ${d.error.detail}` }));
  }
  const changed = changesOf(old, d);
  const rule = d.rule ? state.rules.byId.get(d.rule) : null;
  const summary = el("summary", {},
    el("span", { class: "head" },
      el("span", { class: "who", text: `User turn ${result.userTurn}` }), " ",
      el("span", { class: `badge kind-${d.kind}`, text: d.kind }), " ",
      el("span", { class: "rule-id", text: d.rule || "no rule" }),
      changed.length ? el("span", { class: "changed-flag", text: `changed: ${changed.join(", ")}` }) : null),
    markedMessage(result.message, d.span),
    queryView(d));

  const sourceBox = el("div", { class: "source-box", hidden: true });
  const ruleRow = rule
    ? el("p", { class: "rule-row" }, "Rule ",
        el("a", { class: "rule-link", href: `/v1/pack/source?file=${encodeURIComponent(rule.file)}#L${rule.line}`,
                  text: `${rule.shown || rule.file}:${rule.line}`, title: `${rule.file}:${rule.line}` }),
        ` (${rule.id}, ${rule.kind}`, state.rules.composed ? el("span", { class: "rule-pack", text: `, from ${rule.pack}` })
          : null, `): ${rule.description || ""}`)
    : el("p", { class: "rule-row", text: d.kind === "skip" ? "No rule: the message is under the pack's min_chars."
                                                             : "No rule fired: the message is searched as typed." });
  const link = ruleRow.querySelector("a");
  if (link && rule) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      showSource(rule, sourceBox);
    });
    if (state.editor && state.editor.editable(rule.file)) {
      const edit = el("button", { type: "button", class: "edit-rule", text: "Edit the rule" });
      edit.addEventListener("click", () => state.editor.open(rule.file, rule.line));
      ruleRow.append(edit);
    }
  }
  const parts = (d.parts || []).length
    ? el("table", { class: "parts-table", "aria-label": "query parts" },
        el("thead", {}, el("tr", {}, ["part", "from", "text"].map((h) => el("th", { scope: "col", text: h })))),
        el("tbody", {}, d.parts.map((p) => el("tr", { class: `part-${p.name}` },
          el("td", { text: p.name }), el("td", { text: partWhere(p) + (p.rule ? ` (${p.rule})` : "") }),
          el("td", { text: p.text })))))
    : null;
  const nearMisses = d.kind === "skip" ? null : el("div", { class: "near-misses", "data-state": "waiting" });
  const body = el("div", { class: "body" },
    ruleRow, nearMisses, sourceBox,
    d.matched ? el("p", {}, "Matched ", el("q", { text: d.matched }), ` at ${d.span[0]}..${d.span[1]}.`) : null,
    parts,
    d.note ? el("p", { class: "note", text: `Note: ${d.note}` }) : null,
    changed.length ? diffTable(old, d, changed) : null,
    state.memory && $("tenant").value.trim() ? el("div", { class: "recall" }) : null,
    saveBox(result));

  const details = el("details", { class: "turn-details", open: changed.length > 0 }, summary, body);
  if (nearMisses) {
    const once = () => {
      if (details.open && nearMisses.dataset.state === "waiting") fillNearMisses(result, nearMisses);
    };
    details.addEventListener("toggle", once);
    once();
  }
  const li = el("li", {
    class: `turn turn-user${changed.length ? " changed" : ""}`, "data-index": result.index,
    "data-kind": d.kind, "data-rule": d.rule || "", "data-changed": changed.join(" "),
  }, details);
  return li;
}

function assistantTurn(turn, number) {
  return el("li", { class: "turn turn-assistant" },
    el("p", {}, el("span", { class: "who", text: `Assistant turn ${number}` }), " ",
       el("span", { class: "message", text: turn.content })));
}

// -- a run ----------------------------------------------------------------------------------------

function setStatus(text) {
  $("status").textContent = text;
}

async function execute(turns, reason) {
  const users = [];
  turns.forEach((turn, index) => {
    if (turn.role === "user") {
      users.push({ index, message: turn.content, history: turns.slice(0, index).map((t) => t.item) });
    }
  });
  document.body.dataset.state = "running";
  setStatus(users.length ? `classifying ${users.length} user turns…` : "no user turn to classify");
  const batch = users.length
    ? await api("/v1/classify/batch", { method: "POST", body: { items: users.map(({ message, history }) => ({ message, history })) } })
    : { results: [] };
  const hash = (batch.results.find((r) => !r.error) || {}).pack_hash || (state.status && state.status.hash);
  if (hash) await ensureRules(hash);
  const results = users.map((u, n) => ({ ...u, userTurn: n + 1, decision: batch.results[n] }));

  const previous = reason === "pack" && state.last ? state.last : null;
  const list = $("turns");
  const items = [];
  const changes = [];
  let assistants = 0;
  let n = 0;
  turns.forEach((turn) => {
    if (turn.role === "assistant") {
      assistants += 1;
      items.push(assistantTurn(turn, assistants));
      return;
    }
    const result = results[n];
    const old = previous && previous.results[n] && previous.results[n].message === result.message
      ? previous.results[n].decision : null;
    items.push(userTurn(result, old));
    const changed = changesOf(old, result.decision);
    if (changed.length) changes.push({ result, old, changed });
    n += 1;
  });
  list.replaceChildren(...items);
  $("turns-empty").hidden = items.length > 0;
  state.last = { hash, turns, results };
  state.runs += 1;
  document.body.dataset.runs = String(state.runs);
  document.body.dataset.hash = hash || "";
  document.body.dataset.state = "idle";
  const changed = list.querySelectorAll("li.changed").length;
  setStatus(`${users.length} user turns classified by ${state.status ? state.status.pack : "the pack"} (${hash})`
            + (previous ? `; the pack changed: ${changed} turn${changed === 1 ? "" : "s"} changed` : ""));
  showChanges(previous ? changes : null, previous, hash);
  if (state.memory && $("tenant").value.trim()) {
    list.querySelectorAll("li.turn-user").forEach((li) => {
      const result = results.find((r) => String(r.index) === li.dataset.index);
      const box = li.querySelector(".recall");
      if (result && box) fillRecall(result, box);
    });
  }
}

/** Where the designer edits (the rule files' section): which turns the pack's last change changed, each a button
 * that brings the turn into view (they are below the editor, often below the fold); `changes` null: a run of a
 * conversation of its own (the summary goes). */
function showChanges(changes, previous, hash) {
  const box = $("edit-changes");
  if (!box) return;
  if (changes === null) {
    box.hidden = true;
    $("edit-change-list").replaceChildren();
    return;
  }
  const n = changes.length;
  $("edit-changes-title").textContent = n
    ? `With the new pack (${hash}), ${n} turn${n === 1 ? "" : "s"} changed:`
    : `With the new pack (${hash}), no turn of the conversation changed.`;
  box.dataset.hash = hash || "";
  $("edit-change-list").replaceChildren(...changes.map(({ result, old, changed }) => {
    const d = result.decision;
    // the kind and the rule old → new; a query, often lines long, as changed (the turn's table shows both)
    const what = changed.map((field) => (field === "query" ? "query changed"
      : `${field} ${old[field] ?? "—"} → ${d[field] ?? "—"}`)).join("; ");
    const go = el("button", { type: "button", class: "goto-turn", text: `User turn ${result.userTurn}` });
    go.addEventListener("click", () => {
      const li = document.querySelector(`#turns li.turn-user[data-index="${result.index}"]`);
      if (!li) return;
      li.scrollIntoView({ block: "center" });
      li.querySelector("summary").focus();
    });
    return el("li", { class: "change", "data-index": result.index }, go, `: ${what}`);
  }));
  box.hidden = false;
}

function run(reason = "manual") {
  let turns;
  if (reason === "pack" && state.last) {
    turns = state.last.turns;
  } else {
    try {
      turns = parseConversation($("conversation").value);
      $("editor-error").hidden = true;
    } catch (error) {
      $("editor-error").textContent = error.message;
      $("editor-error").hidden = false;
      return Promise.resolve();
    }
  }
  const go = async () => {
    if (reason === "pack" && state.last && state.status && state.last.hash === state.status.hash) return;
    try {
      await execute(turns, reason);
    } catch (error) {
      document.body.dataset.state = "idle";
      setStatus(`the conversation could not be run: ${error.message}`);
    }
  };
  state.running = (state.running || Promise.resolve()).then(go);
  return state.running;
}

// -- the live loop --------------------------------------------------------------------------------

function showProblems(status) {
  const box = $("problems");
  const key = status.last_error ? `${status.rejections}\n${status.last_error}` : "";
  if (key === state.problemsShown) return;
  state.problemsShown = key;
  if (!status.last_error) {
    box.hidden = true;
    $("problem-list").replaceChildren();
    return;
  }
  $("problems-lead").textContent = `${status.pack} ${status.version} (${status.hash}) keeps answering until the `
    + "files are fixed:";
  const problems = status.problems && status.problems.length ? status.problems : null;
  $("problem-list").replaceChildren(...(problems
    ? problems.map(problemItem)
    : [el("li", { class: "problem", text: status.last_error })]));
  box.hidden = false;
}

/** One located problem: file:line:col, severity[code], the rule, the message and its help. */
function problemItem(p) {
  return el("li", { class: `problem problem-${p.severity}` },
    el("span", { class: "location", text: p.line ? `${p.file}:${p.line}:${p.col}` : p.file }), " ",
    el("span", { class: "code", text: `${p.severity}[${p.code}]` }), " ",
    p.rule ? el("span", { class: "problem-rule", text: p.rule }) : null, p.rule ? " " : null,
    el("span", { class: "problem-message", text: p.message }),
    p.help ? el("span", { class: "help-line", text: `help: ${p.help}` }) : null);
}

function showPack(status) {
  const on = (status.bases || []).map((b) => ` on ${b.name} ${b.version}`).join(",");
  $("pack").textContent = `pack: ${status.pack} ${status.version} (${status.hash})${on} · reloads ${status.reloads}`
    + ` · refused ${status.rejections}`;
  document.body.dataset.pack = status.hash;
}

async function poll() {
  try {
    const status = await api("/v1/pack");
    state.status = status;
    showPack(status);
    showProblems(status);
    if (state.last && status.hash !== state.last.hash) {
      if (state.editor) await state.editor.refresh();
      await run("pack");
    }
  } catch (error) {
    $("pack").textContent = `pack: the service cannot be asked (${error.message})`;
  } finally {
    setTimeout(poll, state.pollMs);
  }
}

/** An edit was written and serves: show the pack now serving and run the conversation again with it. */
async function packWritten() {
  const status = await api("/v1/pack");
  state.status = status;
  showPack(status);
  showProblems(status);
  if (state.last && status.hash !== state.last.hash) await run("pack");
}

async function start() {
  const editor = $("conversation");
  editor.value = localStorage.getItem("cleo-conversation") || SAMPLE;
  editor.addEventListener("input", () => localStorage.setItem("cleo-conversation", editor.value));
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run();
    }
  });
  $("run").addEventListener("click", () => run());
  $("connection-form").addEventListener("submit", (event) => event.preventDefault());
  const tenant = $("tenant");
  tenant.value = params.get("tenant") || sessionStorage.getItem("cleo-tenant") || "";
  tenant.addEventListener("change", () => {
    sessionStorage.setItem("cleo-tenant", tenant.value.trim());
    run();
  });
  $("k").addEventListener("change", () => run());
  const key = $("key");
  key.value = state.key;
  key.addEventListener("change", () => {
    useKey(key.value.trim());
    run();
  });
  try {
    const ready = await api("/readyz");
    state.memory = Boolean(ready.memory);
  } catch (error) {
    setStatus(`the service is not ready: ${error.message}`);
  }
  tenant.disabled = !state.memory;
  $("memory-help").textContent = state.memory
    ? "With a tenant, each turn shows what its memory recalls for the shaped query beside what the message as "
      + "typed would have recalled."
    : "This service has no memory (it was started without --memory): recalled items are not shown.";
  try {
    state.status = await api("/v1/pack");
    showPack(state.status);
    showProblems(state.status);
  } catch (error) {
    $("pack").textContent = `pack: the service cannot be asked (${error.message})`;
  }
  if (state.status && state.status.editing && state.status.editing.writable) {
    state.editor = createEditor({ api, el, $, problemItem, onWritten: packWritten });
    await state.editor.start();
  }
  await run();
  document.body.dataset.ready = "true";
  setTimeout(poll, state.pollMs);
}

start();

// The playground's rule file editor (cleo-rules playground --writable-pack).
//
// One file of the pack's own (GET /v1/pack/files lists them) in a text area. After a pause in typing the text is
// sent to PUT /v1/pack/file with the SHA-256 of the text it started from; the service judges the whole pack with it
// (compile, examples, corpus) and writes it only if the pack passes. Written: the turns run again with the pack
// now serving. Not written: every problem is listed below the file, at its file:line:col with its rule and help,
// a problem in this file a button that selects its line; above the list, the one action that fixes what was found
// (building the generated corpus for a stale corpus only, the key a typo meant, else the first error's line and help).
// A file opens at its first rule (its comment header above it), its long lines wrapped.

/** Milliseconds without typing before an edit is sent. */
export const PAUSE_MS = 500;

export function createEditor({ api, el, $, problemItem, onWritten }) {
  const area = $("rule-text");
  const picker = $("rule-file");
  const ed = {
    files: [],
    file: null,     // the file shown
    sha: null,      // of its text on disk: If-Match for the next edit
    saved: "",      // its text on disk
    judged: null,   // the last text sent
    timer: null,
    busy: false,
    again: false,
    edits: 0,
    fix: null,      // the action offered for what the last judgement found
  };

  function say(text) {
    $("edit-status").textContent = text;
  }

  function setState(name) {
    document.body.dataset.editState = name;
  }

  function where() {
    const before = area.value.slice(0, area.selectionStart);
    const line = before.split("\n").length;
    $("edit-where").textContent = `Ln ${line}, Col ${before.length - before.lastIndexOf("\n")}`;
  }

  /** How far down the text area line `n` starts, its long lines wrapped as shown: measured on a copy of the area
   * that holds the lines before it. */
  function lineTop(n) {
    const style = getComputedStyle(area);
    const copy = document.createElement("textarea");
    for (const name of ["font", "letterSpacing", "lineHeight", "padding", "border", "whiteSpace",
      "overflowWrap", "wordBreak", "tabSize"]) copy.style[name] = style[name];
    copy.style.boxSizing = "border-box";
    copy.style.width = `${area.offsetWidth}px`;
    copy.style.height = "0";
    copy.style.minHeight = "0";
    copy.style.position = "absolute";
    copy.style.visibility = "hidden";
    copy.style.overflowY = "scroll";
    copy.value = area.value.split("\n").slice(0, n - 1).join("\n") + (n > 1 ? "\n" : "");
    document.body.append(copy);
    const top = n > 1 ? copy.scrollHeight - parseFloat(style.paddingBottom) - (parseFloat(style.lineHeight) || 20)
      : 0;
    copy.remove();
    return Math.max(0, top);
  }

  /** Select line `line` of the text (from column `col`) and bring it into view, two lines of context above it;
   * `focus` false leaves the focus where it is (a file just opened). */
  function selectLine(line, col = 1, focus = true) {
    const lines = area.value.split("\n");
    const n = Math.min(Math.max(1, line), lines.length);
    let start = 0;
    for (let i = 0; i < n - 1; i += 1) start += lines[i].length + 1;
    const end = start + lines[n - 1].length;
    if (focus) area.focus();
    area.setSelectionRange(Math.min(start + Math.max(0, col - 1), end), end);
    const height = parseFloat(getComputedStyle(area).lineHeight) || 20;
    area.scrollTop = Math.max(0, lineTop(n) - 2 * height);
    where();
  }

  /** The line a file opens at: its first rule (`- id:`), else its first line that is not a comment. */
  function firstRuleLine(text) {
    const lines = text.split("\n");
    const rule = lines.findIndex((l) => /^\s*-\s+id\s*:/.test(l));
    if (rule >= 0) return rule + 1;
    const plain = lines.findIndex((l) => l.trim() && !l.trim().startsWith("#"));
    return plain >= 0 ? plain + 1 : 1;
  }

  /** Replace key `bad` on line `line` (at column `col`) with `good`, as a person would type it: checked again. */
  function replaceKey(line, col, bad, good) {
    const lines = area.value.split("\n");
    if (line < 1 || line > lines.length) return;
    let start = 0;
    for (let i = 0; i < line - 1; i += 1) start += lines[i].length + 1;
    const text = lines[line - 1];
    const at = text.slice(col - 1, col - 1 + bad.length) === bad ? col - 1 : text.indexOf(bad);
    if (at < 0) return;
    area.focus();
    area.setSelectionRange(start + at, start + at + bad.length);
    if (!document.execCommand("insertText", false, good)) {
      area.setRangeText(good, start + at, start + at + bad.length, "end");
      area.dispatchEvent(new Event("input"));
    }
    where();
  }

  /** The one action that fixes what the judgement found, or null (the pack checks, or nothing can be offered). */
  function fixFor(done, problems) {
    const errors = problems.filter((p) => p.severity === "error");
    if (done.ok || !errors.length) return null;
    // only a stale generated corpus (E231) is fixed by building it with the edit
    if (errors.every((p) => p.code === "E231")) return { rebuild: true };
    const first = errors[0];
    const here = first.file === ed.file && first.line;
    const typo = /unknown key '([^']+)'/.exec(first.message || "");
    const meant = /did you mean '([^']+)'\?/.exec(first.help || "");
    if (here && typo && meant) {
      return { label: `Replace '${typo[1]}' with '${meant[1]}' (line ${first.line})`, help: "the key it looks like",
               run: () => replaceKey(first.line, first.col, typo[1], meant[1]) };
    }
    const at = first.line ? `${first.file}:${first.line}:${first.col}` : first.file;
    if (here) {
      return { label: `Go to line ${first.line}`, help: `${at}: ${first.help || first.message}`,
               run: () => selectLine(first.line, first.col) };
    }
    return { label: null, help: `${at}: ${first.help || first.message}` };
  }

  function showFix(fix) {
    $("edit-rebuild-box").hidden = !(fix && fix.rebuild);
    const box = $("edit-fix-box");
    const button = $("edit-fix");
    box.hidden = !fix || Boolean(fix.rebuild);
    ed.fix = fix && !fix.rebuild ? fix : null;
    if (box.hidden) return;
    button.hidden = !fix.label;
    button.textContent = fix.label || "";
    $("edit-fix-help").textContent = fix.help || "";
  }

  function showProblems(done) {
    const box = $("edit-problems");
    const problems = done ? done.problems || [] : [];
    area.setAttribute("aria-invalid", done && !done.ok ? "true" : "false");
    showFix(done ? fixFor(done, problems) : null);
    if (!problems.length) {
      box.hidden = true;
      $("edit-problem-list").replaceChildren();
      return;
    }
    $("edit-problems-title").textContent = done.ok
      ? "The pack checks with this edit; notes:"
      : `Not written: the pack does not check with this edit (${done.errors} error${done.errors === 1 ? "" : "s"})`;
    box.classList.toggle("passes", Boolean(done.ok));
    $("edit-problem-list").replaceChildren(...problems.map((p) => {
      const item = problemItem(p);
      if (p.file === ed.file && p.line) {
        const at = el("button", { type: "button", class: "goto location", text: `${p.file}:${p.line}:${p.col}`,
                                  title: `select line ${p.line} of ${p.file}` });
        at.addEventListener("click", () => selectLine(p.line, p.col));
        item.querySelector(".location").replaceWith(at);
      }
      return item;
    }));
    box.hidden = false;
  }

  async function load(file, line = null) {
    const data = await api(`/v1/pack/file?file=${encodeURIComponent(file)}`);
    ed.file = file;
    ed.sha = data.sha256;
    ed.saved = data.text;
    ed.judged = null;
    area.value = data.text;
    picker.value = file;
    sessionStorage.setItem("cleo-edit-file", file);
    showProblems(null);
    say(`${file}, as on disk.`);
    setState("loaded");
    if (line) selectLine(line);
    else selectLine(firstRuleLine(data.text), 1, false);
  }

  async function submit(rebuild = false) {
    clearTimeout(ed.timer);
    if (ed.busy) {
      ed.again = true;
      return;
    }
    const text = area.value;
    if (!rebuild && (text === ed.judged || (text === ed.saved && ed.judged === null))) return;
    ed.busy = true;
    ed.judged = text;
    const file = ed.file;
    setState("checking");
    say(rebuild ? `Building the generated corpus with this edit of ${file} and checking the pack…`
                : `Checking the pack with this edit of ${file}…`);
    try {
      const query = `file=${encodeURIComponent(file)}${rebuild ? "&rebuild=true" : ""}`;
      const done = await api(`/v1/pack/file?${query}`,
                             { method: "PUT", text, headers: { "If-Match": `"${ed.sha}"` } });
      if (file !== ed.file) return;
      ed.sha = done.sha256;
      if (done.ok) ed.saved = text;
      showProblems(done);
      if (done.written) {
        ed.edits += 1;
        document.body.dataset.edits = String(ed.edits);
        const rebuilt = (done.rebuilt || []).length
          ? ` With it, ${done.rebuilt.length} generated corpus file${done.rebuilt.length === 1 ? "" : "s"} rebuilt: `
            + `${done.rebuilt.join(", ")}.` : "";
        say(`Written: ${file}.${rebuilt} ${done.serving.pack} ${done.serving.version} (${done.serving.hash}) serves `
            + "it; the turns run again.");
        setState("written");
        await onWritten(done.serving);
      } else if (done.ok) {
        say(`The pack checks; ${file} on disk is this text already.`);
        setState("unchanged");
      } else {
        say(`Not written: ${file} on disk is unchanged.`);
        setState("rejected");
      }
    } catch (error) {
      const conflict = error.status === 412;
      showProblems({ ok: false, errors: 1, problems: [{
        severity: "error", code: (error.problem && error.problem.code) || String(error.status || ""),
        file, line: 0, col: 0, message: error.message,
        help: conflict ? "the file was saved elsewhere meanwhile: choose it again in the list to load it from disk "
                         + "(this edit is then dropped)" : "",
      }] });
      say(`Not written: ${error.message}`);
      setState(conflict ? "conflict" : "failed");
    } finally {
      ed.busy = false;
      if (ed.again) {
        ed.again = false;
        submit();
      }
    }
  }

  async function start() {
    let listed;
    try {
      listed = await api("/v1/pack/files");
    } catch (error) {
      return;
    }
    if (!listed.writable || !listed.files.length) return;
    ed.files = listed.files;
    picker.replaceChildren(...ed.files.map((f) => el("option", { value: f.file, text: `${f.file} (${f.role})` })));
    picker.addEventListener("change", () => load(picker.value));
    $("edit-rebuild").addEventListener("click", () => submit(true));
    $("edit-fix").addEventListener("click", () => {
      if (ed.fix && ed.fix.run) ed.fix.run();
    });
    area.addEventListener("input", () => {
      setState("editing");
      say("Edited: the pack is checked after a pause in typing.");
      clearTimeout(ed.timer);
      ed.timer = setTimeout(submit, PAUSE_MS);
    });
    for (const name of ["keyup", "click", "focus"]) area.addEventListener(name, where);
    $("rules").hidden = false;
    const remembered = sessionStorage.getItem("cleo-edit-file");
    const first = ed.files.find((f) => f.file === remembered) || ed.files.find((f) => f.role === "rules")
      || ed.files[0];
    await load(first.file);
  }

  /** After the pack changed on disk: show the file as it is now, unless it holds an edit of its own. */
  async function refresh() {
    if (!ed.file || ed.busy || area.value !== ed.saved) return;
    const data = await api(`/v1/pack/file?file=${encodeURIComponent(ed.file)}`);
    if (data.sha256 !== ed.sha && area.value === ed.saved) {
      ed.sha = data.sha256;
      ed.saved = data.text;
      area.value = data.text;
    }
  }

  return {
    start,
    refresh,
    editable: (file) => ed.files.some((f) => f.file === file),
    open: async (file, line) => {
      $("rules").scrollIntoView({ block: "start" });
      if (file !== ed.file) await load(file, line);
      else selectLine(line);
    },
  };
}

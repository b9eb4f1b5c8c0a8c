// The playground's rule file editor (cleo-rules playground --writable-pack).
//
// One file of the pack's own (GET /v1/pack/files lists them) in a text area. After a pause in typing the text is
// sent to PUT /v1/pack/file with the SHA-256 of the text it started from; the service judges the whole pack with it
// (compile, examples, corpus) and writes it only if the pack passes. Written: the turns run again with the pack
// now serving. Not written: every problem is listed below the file, at its file:line:col with its rule and help,
// a problem in this file a button that selects its line.

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

  /** Select line `line` of the text (from column `col`) and bring it into view. */
  function selectLine(line, col = 1) {
    const lines = area.value.split("\n");
    const n = Math.min(Math.max(1, line), lines.length);
    let start = 0;
    for (let i = 0; i < n - 1; i += 1) start += lines[i].length + 1;
    const end = start + lines[n - 1].length;
    area.focus();
    area.setSelectionRange(Math.min(start + Math.max(0, col - 1), end), end);
    const height = parseFloat(getComputedStyle(area).lineHeight) || 20;
    area.scrollTop = Math.max(0, (n - 3) * height);
    where();
  }

  function showProblems(done) {
    const box = $("edit-problems");
    const problems = done ? done.problems || [] : [];
    area.setAttribute("aria-invalid", done && !done.ok ? "true" : "false");
    $("edit-rebuild-box").hidden = true;
    if (!problems.length) {
      box.hidden = true;
      $("edit-problem-list").replaceChildren();
      return;
    }
    $("edit-problems-title").textContent = done.ok
      ? "The pack checks with this edit; notes:"
      : `Not written: the pack does not check with this edit (${done.errors} error${done.errors === 1 ? "" : "s"})`;
    box.classList.toggle("passes", Boolean(done.ok));
    // stale (E231): the edit changed templates, slots or limits; offer to build the generated corpus with it
    $("edit-rebuild-box").hidden = done.ok || !problems.some((p) => p.code === "E231" && p.severity === "error");
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

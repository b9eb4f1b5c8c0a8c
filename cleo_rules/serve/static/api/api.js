// The OpenAPI document of this service, for people to read: every path and its operations (summary, key,
// parameters, request body, responses), then every schema the document names, each linked where it is used.
//
// Everything comes from /openapi.json on the service that served this page; nothing is fetched from anywhere
// else, and nothing runs or is styled inline (the page's Content-Security-Policy allows neither).

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const SCHEMAS = "#/components/schemas/";
const MAX_DEPTH = 8; // nested schemas shown inline; deeper ones are named, not drawn
const FACTS = [
  ["format", "format"], ["pattern", "pattern"], ["minLength", "at least {} characters"],
  ["maxLength", "at most {} characters"], ["minimum", "at least {}"], ["maximum", "at most {}"],
  ["exclusiveMinimum", "over {}"], ["exclusiveMaximum", "under {}"], ["minItems", "at least {} items"],
  ["maxItems", "at most {} items"], ["default", "default {}"],
];

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const code = (text) => el("code", { text });
const json = (value) => JSON.stringify(value);

/** The id a path's operation is found under: `op-post-/v1/classify`. */
export function operationId(method, path) {
  return `op-${method}-${path}`;
}

/** A schema reference as a link to the schema (a reference outside the components as its text). */
function refLink(ref) {
  if (typeof ref === "string" && ref.startsWith(SCHEMAS)) {
    const name = ref.slice(SCHEMAS.length);
    return el("a", { class: "ref", href: `#schema-${name}`, text: name });
  }
  return code(String(ref));
}

/** The schema's type in words, and its limits ("string or null, at most 200 characters"). */
function summary(schema) {
  const type = Array.isArray(schema.type) ? schema.type.join(" or ") : schema.type;
  const facts = [];
  for (const [key, words] of FACTS) {
    if (schema[key] !== undefined) {
      const value = key === "pattern" || key === "format" ? schema[key] : json(schema[key]);
      facts.push(words.includes("{}") ? words.replace("{}", value) : `${words} ${value}`);
    }
  }
  return [type, ...facts].filter(Boolean).join(", ");
}

/** A JSON Schema, drawn as nested lists: type and limits, values allowed, properties, items, alternatives. */
export function schemaView(schema, depth = 0) {
  if (schema === true || schema === false) return el("span", { class: "type", text: schema ? "anything" : "nothing" });
  if (!schema || typeof schema !== "object") return el("span", { class: "type", text: "?" });
  const box = el("div", { class: "schema-view" });
  if (schema.$ref !== undefined) {
    box.append(el("p", { class: "type-line" }, refLink(schema.$ref)));
  }
  const head = summary(schema);
  if (head) box.append(el("p", { class: "type-line" }, el("span", { class: "type", text: head })));
  if (schema.const !== undefined) box.append(el("p", {}, "always ", code(json(schema.const))));
  if (Array.isArray(schema.enum)) {
    box.append(el("p", { class: "enum" }, "one of: ",
      schema.enum.map((value, i) => [i ? ", " : "", code(json(value))])));
  }
  if (schema.description) box.append(el("p", { class: "description", text: schema.description }));
  if (depth >= MAX_DEPTH) {
    if (schema.properties || schema.items || schema.oneOf || schema.anyOf || schema.allOf) {
      box.append(el("p", { class: "help", text: "(nested further: see the JSON document)" }));
    }
    return box;
  }
  if (schema.properties && typeof schema.properties === "object") {
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    const mark = (name) => (required.has(name) ? el("span", { class: "required", text: "required" }) : null);
    box.append(el("ul", { class: "props" }, Object.entries(schema.properties).map(([name, sub]) =>
      el("li", { class: "prop", "data-name": name },
        el("span", { class: "prop-head" }, code(name), mark(name)), schemaView(sub, depth + 1)))));
  } else if (Array.isArray(schema.required) && schema.required.length) {
    box.append(el("p", {}, "requires ", schema.required.map((name, i) => [i ? ", " : "", code(name)])));
  }
  if (schema.additionalProperties === false) box.append(el("p", { class: "help", text: "no other properties" }));
  if (schema.items !== undefined) box.append(el("div", { class: "items" }, el("p", { text: "each item:" }),
    schemaView(schema.items, depth + 1)));
  for (const [key, words] of [["oneOf", "exactly one of"], ["anyOf", "any of"], ["allOf", "all of"]]) {
    if (Array.isArray(schema[key])) {
      box.append(el("div", { class: "alternatives" }, el("p", { text: `${words}:` }),
        el("ol", {}, schema[key].map((sub) => el("li", {}, schemaView(sub, depth + 1))))));
    }
  }
  if (schema.not !== undefined) box.append(el("div", { class: "not" }, el("p", { text: "not:" }),
    schemaView(schema.not, depth + 1)));
  return box;
}

function contentView(content) {
  return el("ul", { class: "content" }, Object.entries(content || {}).map(([media, body]) =>
    el("li", {}, code(media), body && body.schema !== undefined ? schemaView(body.schema, 1) : null)));
}

function keyNeeded(operation, doc) {
  const security = operation.security ?? doc.security ?? [];
  const schemes = security.flatMap((requirement) => Object.keys(requirement || {}));
  return schemes.length ? `needs a key (${[...new Set(schemes)].join(", ")})` : "needs no key";
}

function parametersView(parameters) {
  return el("table", { class: "params" },
    el("thead", {}, el("tr", {}, ["name", "in", "required", "schema"].map((h) => el("th", { scope: "col", text: h })))),
    el("tbody", {}, parameters.map((p) => el("tr", { class: "param", "data-name": p.name },
      el("td", {}, code(p.name)), el("td", { "data-label": "in", text: p.in }),
      el("td", { "data-label": "required", text: p.required ? "yes" : "no" }),
      el("td", {}, p.description ? el("p", { class: "description", text: p.description }) : null,
         schemaView(p.schema || {}, 1))))));
}

function responsesView(responses) {
  return el("dl", { class: "responses" }, Object.entries(responses || {}).map(([status, response]) => [
    el("dt", { class: `status status-${status.charAt(0)}xx`, text: status }),
    el("dd", {}, el("p", { text: response.description || "" }),
       response.content ? contentView(response.content) : null),
  ]));
}

function operationView(path, method, operation, doc) {
  const parameters = Array.isArray(operation.parameters) ? operation.parameters : [];
  const body = operation.requestBody;
  return el("section", { class: "op", id: operationId(method, path), "data-path": path, "data-method": method },
    el("h3", {}, el("span", { class: `method method-${method}`, text: method.toUpperCase() }), " ",
       el("code", { class: "path", text: path })),
    operation.summary ? el("p", { class: "summary", text: operation.summary }) : null,
    el("p", { class: "key", text: `This operation ${keyNeeded(operation, doc)}.` }),
    parameters.length ? [el("h4", { text: "Parameters" }), parametersView(parameters)] : null,
    body ? [el("h4", { text: body.required ? "Request body (required)" : "Request body" }),
            contentView(body.content)] : null,
    el("h4", { text: "Responses" }), responsesView(operation.responses));
}

/** Draw the whole document into the page; returns how many paths it lists. */
export function render(doc) {
  const info = doc.info || {};
  $("title").textContent = `${info.title || "API"}`;
  document.title = `${info.title || "API"}: the API`;
  $("version").textContent = `version ${info.version || "?"} · OpenAPI ${doc.openapi || "?"}`;
  $("description").textContent = info.description || "";
  const paths = Object.entries(doc.paths || {});
  const toc = [];
  const sections = [];
  for (const [path, item] of paths) {
    for (const method of METHODS) {
      const operation = item && item[method];
      if (!operation) continue;
      sections.push(operationView(path, method, operation, doc));
      toc.push(el("li", { "data-path": path, "data-method": method },
        el("a", { href: `#${operationId(method, path)}` },
          el("span", { class: `method method-${method}`, text: method.toUpperCase() }), " ", code(path)),
        operation.summary ? el("span", { class: "toc-summary", text: ` ${operation.summary}` }) : null));
    }
  }
  $("toc-list").replaceChildren(...toc);
  $("operation-list").replaceChildren(...sections);
  const schemas = Object.entries((doc.components && doc.components.schemas) || {});
  $("schema-list").replaceChildren(...schemas.map(([name, schema]) =>
    el("section", { class: "schema", id: `schema-${name}`, "data-name": name },
      el("h3", {}, code(name)), schemaView(schema, 0))));
  return paths.length;
}

function filter(text) {
  const words = text.trim().toLowerCase().split(/\s+/).filter(Boolean);
  for (const node of document.querySelectorAll("section.op, #toc-list li")) {
    const section = node.matches("section.op") ? node : $(operationId(node.dataset.method, node.dataset.path));
    const haystack = section ? section.textContent.toLowerCase() : "";
    node.hidden = !words.every((word) => haystack.includes(word));
  }
}

async function start() {
  const status = $("status");
  try {
    const response = await fetch("/openapi.json", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`the service answered ${response.status}`);
    const doc = await response.json();
    const count = render(doc);
    status.textContent = `${count} paths, ${document.querySelectorAll("section.op").length} operations, `
      + `${document.querySelectorAll("section.schema").length} schemas.`;
    document.body.dataset.paths = String(count);
    if (location.hash) {
      const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView();
    }
  } catch (error) {
    status.textContent = `The OpenAPI document cannot be read: ${error.message}`;
    status.classList.add("error");
  }
  $("filter").addEventListener("input", (event) => filter(event.target.value));
  document.body.dataset.ready = "true";
}

start();

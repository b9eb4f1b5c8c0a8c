"""Every error code cleo-rules reports, in one registry.

Each code has one meaning, a message template (the shape of the messages
reported under it; ``{name}`` stands for a part that varies), one line of
general help (a finding may carry more specific help of its own) and a
category. The category decides the command line's exit code:

====================  ====  =========================================
category              exit  what
====================  ====  =========================================
``pack``              1     a finding in a rule pack
``corpus``            1     a finding in a pack's corpus
``usage``             2     a bad argument or input
``environment``       2     something missing around the program (an extra, a store)
``internal``          3     a bug in cleo-rules
====================  ====  =========================================

``docs/errors.md`` is generated from this registry by :func:`markdown` (``make docs``).
Codes are recorded as they are raised (:func:`seen`), so the test-suite can
check that every code it raises is registered and every registered code is
raised somewhere in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CATEGORIES", "CODES", "Code", "EXIT_OK", "exit_code", "lookup", "markdown", "observed", "seen"]

EXIT_OK = 0
CATEGORIES = {
    "pack": (1, "a finding in a rule pack"),
    "corpus": (1, "a finding in a pack's corpus"),
    "usage": (2, "a bad argument or input"),
    "environment": (2, "something the program needs around it is missing"),
    "internal": (3, "a bug in cleo-rules"),
}


@dataclass(frozen=True)
class Code:
    code: str
    meaning: str
    template: str
    help: str
    category: str

    @property
    def exit_code(self) -> int:
        return CATEGORIES[self.category][0]

    def matches(self, message: str) -> bool:
        """Whether ``message`` has the shape of this code's template."""
        return _template_regex(self.template).fullmatch(message) is not None


_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def _template_regex(template: str) -> re.Pattern[str]:
    parts = _PLACEHOLDER.split(template)
    return re.compile("(?s)" + ".+?".join(re.escape(p) for p in parts))


def _c(code: str, category: str, meaning: str, template: str, help: str) -> Code:
    return Code(code, meaning, template, help, category)


_ALL = [
    # -- the program ----------------------------------------------------------------
    _c("E000", "internal", "an unexpected error inside cleo-rules",
       "internal error: {error}",
       "this is a bug; report it with the command that caused it (CLEO_RULES_DEBUG=1 prints the traceback)"),
    _c("E001", "usage", "an argument or input is wrong",
       "{detail}",
       "see the command's --help"),
    _c("E002", "environment", "a command needs an optional extra that is not installed",
       "the {what} needs the [{extra}] extra: pip install 'cleo-rules[{extra}]'",
       "install the extra into the same environment as cleo-rules"),
    # -- rule packs: loading ---------------------------------------------------------
    _c("E100", "pack", "a rule pack cannot be loaded (the problems under it say why)",
       "rule pack {pack} is invalid ({count})\n{first}",
       "fix the problems listed, most useful first"),
    _c("E101", "usage", "no rule pack under that name or path",
       "{detail}",
       "give a pack directory, its pack.yaml, or the name of an installed pack (`cleo-rules packs` lists them)"),
    _c("E102", "pack", "a file nests lists and mappings deeper than a rule file may",
       "lists and mappings nested more than {limit} levels deep",
       "flatten the structure; rule files need a few levels"),
    _c("E103", "pack", "a value cannot be read as what its tag or its form says",
       "{detail}",
       "write a plain value of that type (a decimal number, true or false), or quote it if it is text"),
    _c("E104", "pack", "a number that is not finite (NaN or infinity)",
       "{value} is not a finite number",
       "write a number inside the setting's range; NaN and infinity pass range checks and turn bounds off"),
    _c("E106", "pack", "the manifest is a link to a file outside the pack directory",
       "{manifest} is a link to a file outside the pack directory",
       "put the manifest in the pack directory itself; nothing outside the pack is read"),
    _c("E108", "pack", "a file of the pack cannot be read",
       "cannot read file: {reason}",
       "check the file exists and is readable"),
    _c("E110", "pack", "a rule file is not well-formed YAML",
       "YAML {detail}",
       "check indentation, colons and quoting around the position given"),
    _c("E111", "pack", "a YAML tag or a non-string key, which rule files do not allow",
       "{detail}",
       "use plain strings, numbers, booleans, lists and mappings"),
    _c("E112", "pack", "a YAML anchor or alias, which rule files do not allow",
       "{detail} not supported in rule files",
       "write the repeated value out in full"),
    _c("E113", "pack", "a key appears twice in one mapping",
       "duplicate key {key} (first at line {line})",
       "merge or remove one of them"),
    _c("E114", "pack", "a file is over the size limit",
       "file is {size} bytes, over the limit of {limit}",
       "split the file or trim it"),
    _c("E115", "pack", "a file named in the manifest does not exist",
       "file {name} not found in {pack}",
       "create the file or remove it from the manifest's files list"),
    _c("E116", "pack", "a file is not valid UTF-8",
       "file is not valid UTF-8",
       "save the file as UTF-8"),
    _c("E117", "pack", "a rule file is empty",
       "file is empty",
       "a rule file needs at least a `kind` key"),
    _c("E118", "pack", "the manifest lists more files than a pack may hold",
       "{count} files listed, at most {limit}",
       "merge rule files"),
    _c("E119", "pack", "the manifest names a file outside the pack directory",
       "file {name} is outside the pack directory",
       "list files by a path inside the pack, without '..' or a leading '/'"),
    # -- rule packs: schema ------------------------------------------------------------
    _c("E120", "pack", "a value breaks its JSON Schema in a way no more specific code covers",
       "{detail}",
       "see the file's schema in schemas/"),
    _c("E121", "pack", "a key the schema does not know",
       "unknown key {key}",
       "check the spelling; the help lists the keys allowed there"),
    _c("E122", "pack", "a required key is missing",
       "missing required key {key}",
       "add the key; every rule needs an id, a description, examples and counterexamples"),
    _c("E123", "pack", "a value of the wrong type",
       "expected {wanted}, found {found}",
       "quote strings that YAML would read as booleans or numbers"),
    _c("E124", "pack", "a value that is not one of those allowed",
       "{detail}",
       "use one of the values the help lists"),
    _c("E125", "pack", "a list or string that is too short or too long",
       "{detail}",
       "add or remove items"),
    _c("E126", "pack", "a list holds the same item twice",
       "items must be unique",
       "remove the repeated item"),
    _c("E127", "pack", "a string that is not in the required form",
       "{value} is not a valid {what}",
       "the help says the form required"),
    _c("E128", "pack", "a number out of its range",
       "{value} is out of range ({bound})",
       "use a number inside the range"),
    # -- rule packs: lints ---------------------------------------------------------------
    _c("E130", "pack", "a pattern does not compile",
       "pattern does not compile: {error}",
       "fix the regex syntax; in YAML prefer single quotes so backslashes stay as typed"),
    _c("E131", "pack", "a pattern can backtrack catastrophically",
       "pattern can backtrack catastrophically: {why}",
       "bound nested repeats, or make each round of a repeat end in a fixed character"),
    _c("E132", "pack", "two rules share an id",
       "duplicate rule id {id} (first defined at {where})",
       "give every rule a unique id"),
    _c("E133", "pack", "a vocabulary word is listed twice, or in two sets",
       "vocabulary entry {word} is {where}",
       "a word belongs to one set, once"),
    _c("E134", "pack", "an example does not fire its rule",
       "example {example} {outcome}",
       "the help names what took the example instead, or the bound that stopped it"),
    _c("E135", "pack", "a counterexample fires its rule",
       "counterexample {message} {outcome}",
       "narrow the pattern, or take the word out of the vocabulary"),
    _c("E136", "pack", "a correction's request form is a correction (or, given with a history, no follow-up "
                       "after it)",
       "request form {message} {fault}: it is {outcome}",
       "a request ('try that one') is not a correction: narrow the correction pattern"),
    _c("E137", "pack", "a query template (combine, combine_resolved) is malformed or lacks a part it needs",
       "{key} template {detail}",
       "use {anchor}, {referent} and {message}; write {{ or }} for a literal brace"),
    _c("E138", "pack", "a pattern uses named groups",
       "pattern uses named group(s) {names}",
       "use (?:...) instead; rule patterns are combined and names would clash"),
    _c("E139", "pack", "a pattern matches the empty message",
       "pattern matches the empty message",
       "a rule must require some text; check for a pattern that is all optional"),
    _c("E140", "pack", "a pattern holds a control character",
       "pattern holds {what} at position {position}",
       "in YAML double quotes \\b is a backspace: write the pattern in single quotes"),
    _c("E141", "pack", "min_content_words is above max_content_words, so the rule can never fire",
       "min_content_words ({low}) is above max_content_words ({high}): no message can fire this rule",
       "lower min_content_words or raise max_content_words"),
    _c("E142", "pack", "a vocabulary entry has no word in it",
       "vocabulary entry {entry} has no word in it",
       "remove the entry; punctuation is ignored when matching"),
    _c("E143", "pack", "head_in names a lexicon set the pack does not have",
       "head_in names lexicon set {name}, which the pack does not have",
       "use one of the sets of the pack's lexicon file, or list the lexicon file in pack.yaml"),
    _c("E147", "pack", "a pattern too big to compile safely (its length, or what its counted repeats expand to)",
       "pattern {detail}, over the limit of {limit}",
       "use an open repeat (+, *) or a smaller count; counted repeats of groups are copied out when compiled"),
    _c("E148", "pack", "a context template is malformed or uses a field, format or conversion it may not",
       "context template {key} {detail}",
       "use only the fields the help lists for that template, as plain {field}; write {{ or }} for a literal brace"),
    _c("E145", "pack", "a referent rule's example does not find its referent by that rule",
       "example {message} should find {referent} by this rule, but finds {found}",
       "check the pattern matches the referring words and the history offers the referent"),
    _c("E146", "pack", "a referent rule's counterexample finds a referent by that rule",
       "counterexample {message} finds {referent} by this rule",
       "narrow the pattern, or change the counterexample's history"),
    _c("E150", "pack", "a pack named in extends cannot be found",
       "extends {spec}: {detail}",
       "name the bundled pack (cleo-en), an installed pack, or a directory by a path relative to the manifest (./base)"),
    _c("E151", "pack", "a base pack is outside the version range its extends item asks for",
       "extends {spec}: {pack} {version} is outside the range {range} asked for",
       "ask for a range that holds the base's version, or install a version of the base in the range"),
    _c("E152", "pack", "packs extend each other in a cycle",
       "extends {spec} makes a cycle: {cycle}",
       "a pack cannot be built on itself; remove one of the extends"),
    _c("E153", "pack", "disable names a rule that no pack of the composition has",
       "disable names {rule}, which no rule of {packs} has",
       "name a rule of a base (or of the pack) by its id; `cleo-rules check` and `explain` show the ids"),
    _c("E154", "pack", "the version range of an extends item cannot be read",
       "{spec}: {detail}",
       "write a range such as >=1.0,<2, ^1.2, ~1.2.3 or 1.x"),
    _c("E155", "pack", "the manifest of a base pack cannot be read",
       "extends {spec}: the manifest of the pack at {path} cannot be read",
       "fix the base's pack.yaml; its own problem is listed too"),
    _c("E156", "pack", "a composition holds more packs than one may",
       "extends {spec}: the composition would hold more than {limit} packs",
       "build on fewer packs"),
    _c("E157", "pack", "a setting of the pack makes checks of a pack it is built on fail",
       "settings.{key}: {value} makes {what} of {base} fail ({base} has {base_value})",
       "set the value the help names, or turn off the rules it breaks with disable: in this pack.yaml"),
    _c("E190", "pack", "the pack is outside the version range required",
       "{pack} is outside the required version range {range}",
       "use a pack whose version is in the range, or change the range"),
    _c("E191", "usage", "a version or version range is not written as semver",
       "{detail}",
       "write comparators such as >=1.0,<2 or ^1.2 or ~1.2.3, alternatives joined by ||"),
    # -- the corpus -------------------------------------------------------------------------
    _c("E200", "corpus", "the corpus cannot be built or read (the problems under it say why)",
       "{summary} ({count})\n{first}",
       "fix the problems listed"),
    _c("E201", "corpus", "a rule's corpus templates are malformed",
       "{detail}",
       "see `cleo-rules corpus --help` for the template syntax"),
    _c("E202", "corpus", "the staleness of the corpus cannot be judged while its templates are broken",
       "cannot tell whether the corpus is stale until the templates are fixed",
       "fix the template problems first"),
    _c("E203", "corpus", "the pack has no corpus directory",
       "no corpus at {dir}",
       "run `cleo-rules corpus build`, or pass --corpus DIR"),
    _c("E204", "usage", "corpus build would write into the installed package",
       "{pack} is the bundled pack of an installed cleo-rules ({path}); corpus build never writes into the "
       "installed package",
       "give --out DIR to write the corpus elsewhere, or `cleo-rules init` a pack of your own"),
    _c("E205", "usage", "saving a regression would write into the installed package",
       "{pack} is the bundled pack of an installed cleo-rules ({path}); saving a regression never writes into "
       "the installed package",
       "copy the case shown into a regressions.yaml of your own, or serve a pack of your own (`cleo-rules init`)"),
    _c("E206", "corpus", "a case cannot be appended to the regressions file as it is laid out",
       "{file}: {reason}; the case was not appended",
       "add the case by hand, or keep `cases:` the file's last key, written as a block list"),
    _c("E207", "corpus", "the regressions file would go over the size limit of every corpus file",
       "{file} {what}, over the limit of {limit} bytes (1 MiB) every corpus file is held to; the case was not "
       "appended",
       "move closed cases from regressions.yaml into another hand-written file of the corpus directory (only "
       "open cases must stay in regressions.yaml)"),
    _c("E210", "corpus", "a generated corpus file cannot be read",
       "{detail}",
       "regenerate it with `cleo-rules corpus build`"),
    _c("E211", "corpus", "a corpus case lacks an id, a message or an expected kind",
       "{detail}",
       "every case needs `id`, `message` and `expect`"),
    _c("E214", "corpus", "a corpus file is a link to a file outside the corpus directory",
       "corpus file is a link to a file outside the corpus directory",
       "copy the cases into the corpus directory; nothing outside it is read"),
    _c("E215", "corpus", "a case outside the regressions file is marked open",
       "case {id} is marked open: {why}; it is judged as any other case",
       "only a saved regression, a case of corpus/regressions.yaml, can be open; remove `open` elsewhere"),
    _c("E212", "corpus", "two corpus cases share an id",
       "case id {id} is used twice (also at {where})",
       "give every case its own id"),
    _c("E213", "corpus", "a hand-written case names a rule that is not in the pack",
       "case {id} names rule {rule}, which is not in pack {pack}",
       "fix the rule id, or remove the case if the rule is gone"),
    _c("E220", "corpus", "a rule has no positive or no negative case",
       "no {what} case in the corpus",
       "add `generate:` templates to the rule and run `cleo-rules corpus build`"),
    _c("E221", "corpus", "a rule fires on none of its positive cases",
       "fires on none of its {count} positive cases",
       "the rule is dead: an earlier rule takes its messages, or its pattern no longer matches"),
    _c("E223", "corpus", "two corpus cases demand different things of the same message",
       "case {id} ({message}) {clash}",
       "the same message cannot be both; fix the template or the hand-written case"),
    _c("E230", "corpus", "a corpus case fails",
       "corpus case {id} {message}: {detail}",
       "fix the rule, or the case if the rule is right; `cleo-rules corpus check` lists every failing case"),
    _c("E232", "corpus", "an open case: a saved regression the pack does not get right yet (a note, never a failure)",
       "open case {id} {message}: {detail}",
       "fix the rules until it passes, then close it; it never fails a check meanwhile"),
    _c("E233", "corpus", "an open case the pack now gets right: close it (a warning, never a failure)",
       "open case {id} {message} passes now: close it (remove `open: true` at {where})",
       "take `open: true` out of the case, so that it holds from now on"),
    _c("E231", "corpus", "the checked-in corpus is stale",
       "the corpus is stale: {reason}",
       "run `cleo-rules corpus build` and review the diff"),
    # -- editing a pack from the playground ------------------------------------------------
    _c("E240", "usage", "a bundled or installed pack cannot be edited",
       "{path} is {what}; only a team's own pack can be edited, never a bundled or installed one: start one with "
       "`cleo-rules init` (or copy this one) and edit that",
       "start a pack of your own with `cleo-rules init` (or copy this one) and edit that"),
    _c("E241", "usage", "a file that is not one of the pack's own editable files",
       "{file} is not a file of pack {pack} that can be edited; its files: {files}",
       "edit the manifest, a file its `files:` lists or a hand-written corpus file, named as /v1/pack/files "
       "names them"),
    _c("E242", "usage", "the file changed on disk since the edit began",
       "{file} changed on disk since the edit began ({detail}); nothing was written",
       "load the file again and redo the edit on what is there now"),
    # -- the memory store -----------------------------------------------------------------
    _c("E300", "environment", "the memory store cannot be opened, read or written",
       "{detail}",
       "check the --db directory or URL, or rebuild the store"),
    _c("E301", "environment", "there is no memory store in the directory (or database tenant) given",
       "no memory store in {dir}{hint}",
       "give the location of an existing store, or create one with `cleo-rules memory ingest --db DIR|URL FILE`"),
    _c("E302", "environment", "the memory store is busy: another process holds its database",
       "memory store {dir} is busy: {detail}",
       "wait for the other process (an ingest, a rebuild) to finish and try again"),
    _c("E303", "environment", "the memory store's database is damaged",
       "memory store {dir} is damaged: {detail}",
       "restore the directory from a backup, or ingest the data again into a new store"),
    _c("E304", "environment", "a file of the memory store is not a regular file",
       "{path} is {what}, not a regular file{hint}",
       "remove or replace the file; a store holds only regular files"),
    _c("E305", "usage", "a write was asked of a memory store opened read-only",
       "memory store {dir} is open read-only{detail}",
       "open the store without read_only=True to write to it"),
    _c("E306", "environment", "the database server of a PostgreSQL memory store cannot be reached",
       "cannot reach the database of memory store {where}: {detail}",
       "check that the PostgreSQL server is running and the URL is right; the store reconnects by itself once "
       "the server is back"),
    _c("E307", "environment", "every pooled connection of a PostgreSQL memory store stayed in use",
       "memory store {where} is busy: all {size} pooled connections stayed in use for {timeout} s",
       "open the store with a larger pool_size, or send it fewer calls at once"),
    _c("E308", "environment", "a PostgreSQL schema records another tenant, or cannot tell whose it is",
       "memory store {where}: schema {schema} {detail}; nothing was read or written. An operator resolves it: {how}",
       "run `cleo-rules memory tenants --db URL` to list every schema and its tenant, and `--adopt SCHEMA --tenant "
       "NAME` to give one to its tenant (docs/scaling.md)"),
    _c("E309", "environment", "the store's vectors come from another embedding backend whose vectors differ",
       "memory store {where} holds vectors made by {stored}; {detail}",
       "re-embed the store with the backend in use (`cleo-rules memory rebuild --reembed --db DIR|URL`), or open it "
       "with the backend that built it (CLEO_EMBED_BACKEND)"),
    _c("E310", "usage", "ingest input is malformed (the problems under it say where)",
       "{detail}",
       "fix the lines reported, or ingest without --strict to skip them"),
    _c("E311", "usage", "a JSON Lines line is not valid UTF-8 or JSON",
       "{detail}",
       "write one JSON value per line, in UTF-8"),
    _c("E312", "usage", "an ingest line is not a JSON object",
       "a line must hold a JSON object, not {type}",
       "write one JSON object per line"),
    _c("E313", "usage", "an ingest item lacks a required field",
       "missing field {field}",
       "conversations need id, title, date and messages; documents id, title, date and text"),
    _c("E314", "usage", "an ingest field has the wrong type",
       "{detail}",
       "ids, titles, dates and texts are strings; messages a list of {role, text} objects"),
    _c("E315", "usage", "an ingest field is empty or too long",
       "{detail}",
       "give the field a value within its limits"),
    _c("E316", "usage", "an ingest item's type is neither conversation nor document",
       "\"type\" must be \"conversation\" or \"document\", not {type}",
       "set \"type\" to \"conversation\" or \"document\""),
    _c("E317", "usage", "an ingest item's date is not an ISO date",
       "'date' {detail}",
       "write dates as YYYY-MM-DD"),
    _c("E318", "usage", "a JSON Lines line nests arrays and objects too deeply",
       "{what} nested deeper than {limit} levels",
       "a line needs a few levels at most: check what wrote it"),
    _c("E319", "usage", "a string of a JSON Lines line or a service request holds a lone surrogate, which is not "
       "valid Unicode",
       "{what} at {where} holds a lone surrogate ({detail}), which is not valid Unicode",
       "a \\ud800-\\udfff escape must be one half of a pair; fix the program that wrote the line or the request"),
    _c("E320", "usage", "a stream line is not the object the command reads",
       "{detail}",
       'write each line as {"message": "...", "history": [...]}'),
    _c("E321", "usage", "a history item is neither a message string nor a role and content object",
       "{detail}",
       'history items are strings or {"role": "user"|"assistant", "content": "..."}, oldest first'),
    _c("E322", "usage", "an ingest string holds a NUL character (U+0000)",
       "{what} at {where} holds a NUL character ({detail}), which the memory does not store",
       "remove the NUL characters (\\u0000 escapes) from the line; no PostgreSQL text can hold one, so neither "
       "store accepts them"),
]

CODES: dict[str, Code] = {c.code: c for c in _ALL}
assert len(CODES) == len(_ALL), "a code is registered twice"
assert all(c.category in CATEGORIES for c in _ALL)

_observed: set[str] = set()
_messages: dict[str, set[str]] = {}


def seen(code: str, message: str | None = None) -> None:
    """Record that ``code`` was raised (with its message, for the registry's tests)."""
    _observed.add(code)
    if message is not None:
        bucket = _messages.setdefault(code, set())
        if len(bucket) < 64:
            bucket.add(message)


def observed() -> dict[str, set[str]]:
    """Every code raised in this process so far, with up to 64 of its messages each."""
    return {code: set(_messages.get(code, ())) for code in _observed}


def lookup(code: str) -> Code | None:
    return CODES.get(code)


def exit_code(code: str | None) -> int:
    """The command line's exit code for an error of ``code`` (3 for an unregistered one)."""
    entry = CODES.get(code or "")
    return entry.exit_code if entry is not None else CATEGORIES["internal"][0]


def markdown() -> str:
    """``docs/errors.md``: every code, its meaning, message, help and exit code."""
    lines = [
        "# Error codes",
        "",
        "<!-- Generated from the registry in cleo_rules/codes.py by `make docs`; do not edit. -->",
        "",
        "Every problem cleo-rules reports carries one of these codes. The category decides the exit code of",
        "the command line: 0 clean, 1 findings in the pack or corpus, 2 usage or environment error, 3 internal",
        "error.",
        "",
        "| category | exit code | what |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {name} | {exit_} | {what} |" for name, (exit_, what) in CATEGORIES.items()]
    lines += ["", "| code | category | meaning | message | help |", "| --- | --- | --- | --- | --- |"]
    for c in _ALL:
        message = c.template.replace("\n", " / ").replace("|", "\\|")
        lines.append(f"| {c.code} | {c.category} | {c.meaning.replace('|', chr(92) + '|')} | `{message}` | "
                     f"{c.help.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"

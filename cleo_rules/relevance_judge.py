"""A command as the judge of the nightly relevance check.

:func:`judge_pairs` runs a team's own judge (a script, a model behind a
wrapper, anything that speaks JSON Lines) over the pairs ``relevance sample``
drew, and gives back the same lines a person would have written: each pair
with ``"relevant": true`` or ``false``, ready for
:func:`~cleo_rules.relevance.score_judgments`.

The protocol, one pair at a time:

* the command is started once, without a shell (``shlex.split`` of the
  command line), and gets on its stdin one JSON object per line for each pair:
  ``{"pair", "query", "source", "id", "item", "title", "date", "text"}`` (the
  query that was searched and the recalled item's current text). The kind,
  the rule and the retrieval score are withheld, so they cannot sway the
  verdict;
* it answers each line with one line on its stdout, ``{"relevant": true}`` or
  ``{"relevant": false}`` (other fields are ignored; a ``"pair"``, if given,
  must be the pair asked), and must flush it before the next pair is sent;
* its stderr is its own (passed through, or to ``stderr``).

A pair whose answer is not one JSON object, has no boolean ``relevant``,
names another pair, is longer than ``max_answer_bytes``, does not come within
``timeout`` seconds, or never comes because the command exited, stays
unjudged: it is reported (:class:`Unjudged`: which pair, what was wrong) and
counted neither relevant nor irrelevant. After a timeout or an exit the
command is started again for the next pair; after ``max_failures`` of those
in a row, the pairs left are not sent. A pair whose item is gone (no text) or
whose trace was redacted is not sent.

Every read of the command's output is bounded: a line is read at most
``max_answer_bytes`` at a time, and the rest of an over-long line is
discarded as it arrives, never kept.
"""

from __future__ import annotations

import json
import queue
import shlex
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .errors import UsageError
from .jsonl import JsonLineError, json_type, parse_line, read_lines
from .trace import REDACTED

__all__ = ["ASKED_FIELDS", "JudgeRun", "Unjudged", "judge_pairs", "read_sample"]

#: the fields of a sampled pair the judge is given
ASKED_FIELDS = ("pair", "query", "source", "id", "item", "title", "date", "text")
DEFAULT_TIMEOUT = 30.0
MAX_ANSWER_BYTES = 4096
MAX_FAILURES = 3

_EOF = object()
_TOO_LONG = object()


@dataclass(frozen=True)
class Unjudged:
    """A pair the judge gave no verdict on, and why."""

    pair: str
    reason: str


@dataclass
class JudgeRun:
    """What a run gave: the pairs judged (sample lines with a boolean ``relevant``), in the order given, and the
    pairs left unjudged (sample lines with ``"relevant": null`` and ``"judge_error"``) with their reasons."""

    judged: list = field(default_factory=list)
    unjudged: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # Unjudged, in the order met

    def summary(self) -> str:
        relevant = sum(1 for p in self.judged if p["relevant"])
        return (f"{len(self.judged)} pairs judged ({relevant} relevant, {len(self.judged) - relevant} irrelevant), "
                f"{len(self.unjudged)} unjudged")


def read_sample(source: str | Path | IO) -> list[dict]:
    """The pairs of a sample file ``relevance sample`` wrote (a path, or a binary or text stream).

    Each line must be an object with a ``pair`` id string and ``relevant``
    null, true or false; a bad line, a pair given twice or no pairs at all is
    a :class:`~cleo_rules.errors.UsageError` naming the file and line.
    """
    if not isinstance(source, (str, Path)):
        return _read_sample(source, "line ")
    path = Path(source)
    if not path.is_file():
        raise UsageError(f"sample file not found: {path}")
    try:
        with path.open("rb") as fh:
            return _read_sample(fh, f"{path}:")
    except OSError as exc:
        raise UsageError(f"cannot read sample file {path}: {exc.strerror or exc}") from None


def _read_sample(stream, where: str) -> list[dict]:
    pairs, seen = [], set()
    for lineno, value in read_lines(getattr(stream, "buffer", stream)):
        at = f"{where}{lineno}: "
        if isinstance(value, JsonLineError):
            raise UsageError(f"{at}{value}", code=value.code)
        if not isinstance(value, dict) or not isinstance(value.get("pair"), str) or not value["pair"]:
            raise UsageError(f"{at}each line needs a \"pair\" id string as written by 'relevance sample'")
        if value.get("relevant") is not None and not isinstance(value["relevant"], bool):
            raise UsageError(f"{at}pair {value['pair']}: \"relevant\" must be null, true or false, "
                             f"not {json.dumps(value['relevant'])[:60]}")
        if value["pair"] in seen:
            raise UsageError(f"{at}pair {value['pair']} is given twice")
        seen.add(value["pair"])
        pairs.append(value)
    if not pairs:
        raise UsageError("no pairs in the sample: write one with 'relevance sample'")
    return pairs


class _Process:
    """One run of the judge command: a thread writes the pairs, one reads the answers (bounded lines)."""

    def __init__(self, argv: Sequence[str], stderr, max_answer_bytes: int):
        try:
            self.proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        except OSError as exc:
            raise UsageError(f"cannot run the judge command {argv[0]!r}: {exc.strerror or exc}") from None
        self.limit = max_answer_bytes
        self.closed = threading.Event()
        self.answers: queue.Queue = queue.Queue(maxsize=4)
        self.requests: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                line = out.readline(self.limit + 1)
                if not line:
                    break
                if len(line) > self.limit and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # the rest of the line, a bounded piece at a time
                        line = out.readline(65536)
                    self._put(_TOO_LONG)
                else:
                    self._put(line)
        except (OSError, ValueError):
            pass
        self._put(_EOF)
        out.close()

    def _put(self, item) -> None:
        """Hand an answer over; wait while four are unread (a judge that floods is held, not buffered), but give
        up once this run of the judge is over."""
        while not self.closed.is_set():
            try:
                self.answers.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        while (data := self.requests.get()) is not None:
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError):  # the judge closed its stdin or exited: the reader sees the end
                return
        try:
            stdin.close()
        except (OSError, ValueError):
            pass

    def ask(self, data: bytes, timeout: float):
        """The next answer line, :data:`_TOO_LONG`, :data:`_EOF`, or ``None`` when none came within ``timeout``."""
        self.requests.put(data)
        try:
            return self.answers.get(timeout=timeout)
        except queue.Empty:
            return None

    def exit_status(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float) -> None:
        """Close its stdin and let it end; kill it if it does not within ``timeout``."""
        self.requests.put(None)
        self.exit_status(timeout)
        self.kill()

    def kill(self) -> None:
        """End this run of the judge: kill the command (if still running) and let both threads finish."""
        self.closed.set()
        self.requests.put(None)
        self.proc.kill()
        self.proc.wait()


def _verdict(raw, pair: str) -> bool | str:
    """The boolean verdict of one answer line, or what is wrong with it."""
    try:
        value = parse_line(raw)
    except JsonLineError as exc:
        return f"bad answer: {exc}"
    if value is None:
        return "the answer is an empty line"
    if not isinstance(value, dict):
        return f"the answer must be an object {{\"relevant\": true|false}}, not {json_type(value)}"
    if "pair" in value and value["pair"] != pair:
        return f"the answer is for pair {json.dumps(value['pair'])[:40]}, not {pair}"
    if not isinstance(value.get("relevant"), bool):
        what = "missing" if "relevant" not in value else json.dumps(value["relevant"])[:40]
        return f"\"relevant\" must be true or false, not {what}"
    return value["relevant"]


def _not_sendable(pair: dict) -> str | None:
    if pair.get("text") is None:
        return "not sent: the item is no longer in the memory (its text is null)"
    if pair.get("query") in (None, REDACTED):
        return "not sent: the trace keeps no query text (redacted)"
    return None


def judge_pairs(pairs: Iterable[dict], command: str | Sequence[str], *, timeout: float = DEFAULT_TIMEOUT,
                max_answer_bytes: int = MAX_ANSWER_BYTES, max_failures: int = MAX_FAILURES, stderr=None,
                on_problem: Callable[[Unjudged], None] | None = None) -> JudgeRun:
    """Have ``command`` judge each pair whose ``relevant`` is null; pairs already judged are kept as they are.

    ``command`` is a command line (split with :func:`shlex.split`, never run
    by a shell) or an argument list. ``stderr`` is where the command's stderr
    goes (``None``: this process's). ``on_problem`` is called with each
    :class:`Unjudged` as it happens. A command that cannot be started is a
    :class:`~cleo_rules.errors.UsageError`.
    """
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise UsageError("--command is empty: give the judge's command line")
    if timeout <= 0 or max_answer_bytes < 1 or max_failures < 1:
        raise UsageError("the judge's timeout, answer limit and failure limit must be positive")
    run = JudgeRun()
    process: _Process | None = None
    failures, last = 0, ""

    def unjudged(pair: dict, reason: str) -> None:
        run.unjudged.append({**pair, "relevant": None, "judge_error": reason})
        problem = Unjudged(pair["pair"], reason)
        run.problems.append(problem)
        if on_problem is not None:
            on_problem(problem)

    try:
        for pair in pairs:
            if isinstance(pair.get("relevant"), bool):
                run.judged.append(pair)
                continue
            reason = _not_sendable(pair)
            if reason is None and failures >= max_failures:
                reason = f"not sent: the judge failed {failures} times in a row (last: {last})"
            if reason is not None:
                unjudged(pair, reason)
                continue
            if process is None:
                process = _Process(argv, stderr, max_answer_bytes)
            asked = {k: pair.get(k) for k in ASKED_FIELDS}
            answer = process.ask((json.dumps(asked, ensure_ascii=False) + "\n").encode("utf-8", "replace"), timeout)
            if answer is None or answer is _EOF:
                if answer is None:
                    last = f"no answer within {timeout:g} s"
                    process.kill()
                else:
                    status = process.exit_status(timeout)
                    last = ("the judge closed its stdout before answering" if status is None
                            else f"the judge exited with status {status} before answering")
                    process.kill()
                process, failures = None, failures + 1
                unjudged(pair, last)
                continue
            failures = 0
            verdict = (f"the answer is longer than {max_answer_bytes} bytes" if answer is _TOO_LONG
                       else _verdict(answer, pair["pair"]))
            if isinstance(verdict, bool):
                run.judged.append({**pair, "relevant": verdict})
            else:
                unjudged(pair, verdict)
    except BaseException:
        if process is not None:
            process.kill()
        raise
    if process is not None:
        process.stop(timeout)
    return run

"""Bare values and coordinated offers: what a reply's figures are, and what its options are.

A **bare value** is text made only of digits, punctuation, currency symbols
or codes ("EUR", "GBP"), units of measure ("kg", "litres", "min"), times
("9:10", "7 am") or dates ("Friday", "12 March", "17th"): it says how much,
when or how long, and names no thing a follow-up can point at. "It", "that"
and "those" point at things (an option, a product, a service, an
appointment, an order), so :func:`bare_value` text is never a referent.

An **offer** without list markers is a sentence of coordinated phrases
(split on ", ", ";", " and ", " or "): "TAP at 9:10 for 140 EUR and easyJet at
13:25 for 95 EUR." offers "TAP at 9:10 for 140 EUR" and "easyJet at 13:25 for
95 EUR"; "There is one at 8:10 or 8:40." offers the two times.
:func:`coordinated` finds the phrases; the referent finder decides which of
them name a thing. :func:`figure` reads the figure a comparative ("the
cheaper one", "the earlier one") compares.

Every function reads its text once, in time linear in its length.
"""

from __future__ import annotations

import re
from itertools import chain

__all__ = ["CURRENCY_CODES", "UNITS", "bare_value", "coordinated", "figure", "first_value", "same_kinds",
           "value_kinds"]

#: Currency codes and words (lower case): a figure's unit, never a thing.
CURRENCY_CODES = frozenset({
    "eur", "gbp", "usd", "aud", "cad", "chf", "cny", "dkk", "hkd", "inr", "jpy", "nok", "nzd", "pln", "sek", "sgd",
    "zar", "czk", "huf", "try", "mxn", "brl", "krw", "rub", "aed", "euro", "euros", "pound", "pounds", "quid",
    "dollar", "dollars", "cent", "cents", "pence", "p", "yen", "franc", "francs", "krona", "kronor", "rupee",
    "rupees"})
#: Units of measure, of time spans and of counting (lower case).
UNITS = frozenset({
    "mm", "cm", "m", "km", "in", "inch", "inches", "ft", "foot", "feet", "yd", "yard", "yards", "mi", "mile",
    "miles", "g", "kg", "mg", "lb", "lbs", "oz", "st", "ton", "tons", "tonne", "tonnes", "ml", "cl", "l", "litre",
    "litres", "liter", "liters", "gal", "gallon", "gallons", "pt", "pint", "pints", "sq", "sqft", "sqm", "m2", "kw",
    "kwh", "w", "v", "mph", "kph", "s", "sec", "secs", "second", "seconds", "min", "mins", "minute", "minutes", "h",
    "hr", "hrs", "hour", "hours", "day", "days", "wk", "wks", "week", "weeks", "month", "months", "yr", "yrs",
    "year", "years", "percent", "pc", "pcs", "x", "am", "pm", "gmt", "bst", "utc", "cet", "st", "nd", "rd", "th"})
#: Words that name a day, a month or a time of day (lower case, with the usual abbreviations).
DATES = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues", "wed",
    "thu", "thur", "thurs", "fri", "sat", "sun", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec", "today", "tomorrow", "yesterday", "tonight", "noon", "midnight",
    "weekend", "weekday", "weekdays", "morning", "afternoon", "evening", "night"})
_BARE_WORDS = CURRENCY_CODES | UNITS | DATES

_TOKEN = re.compile(r"[^\W\d_]+|\d+")
#: Where one coordinated phrase ends and the next begins.
_JOINT = re.compile(r",?\s+(?:and|or)\s+(?:the\s+)?|,\s+|;\s*", re.I)
#: Where a sentence ends: end punctuation before a space, or a new line.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_TIME = re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*(am|pm)\b|\b(\d{1,2})[:.](\d{2})\b", re.I)
_MONEY = re.compile(r"[£$€¥]\s?(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s?(?:eur|gbp|usd|euros?|pounds?|dollars?|"
                    r"quid)\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])(?:[£$€¥]\s?)?\d[\d,]*(?:\.\d+)?(?![\w])")
_DAY = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\btoday\b|\btomorrow\b", re.I)
#: The comparatives that compare prices, and those that compare times.
PRICE_WORDS = frozenset({"cheaper", "cheapest", "expensive", "dearer", "dearest", "pricier", "priciest"})
TIME_WORDS = frozenset({"earlier", "earliest", "later", "latest", "sooner", "soonest"})


def bare_value(text: str, extra=frozenset()) -> bool:
    """Whether ``text`` is only digits, punctuation, currency symbols or codes, units, times or dates (``extra``:
    more such words, lower case). Text with no word or digit at all (punctuation, or nothing) is bare."""
    for token in _TOKEN.findall(text.lower()):
        if token.isdigit() or token in _BARE_WORDS or token in extra:
            continue
        return False
    return True


def coordinated(text: str, most: int = 64):
    """The coordinated phrases of each sentence of ``text`` that has two or more: one ``[(start, end), ...]`` per
    such sentence (spans in ``text``, stripped of spaces and end punctuation), at most ``most`` phrases in all.

    Yielded sentence by sentence, as they are read: a caller that stops at the first it takes reads no further."""
    count = 0
    pos = 0
    for end_match in chain(_SENTENCE_END.finditer(text), (None,)):
        end = end_match.start() if end_match is not None else len(text)
        spans = []
        at = pos
        for joint in _JOINT.finditer(text, pos, end):
            spans.append((at, joint.start()))
            at = joint.end()
        spans.append((at, end))
        pieces = [_strip(text, a, b) for a, b in spans]
        pieces = [p for p in pieces if p[0] < p[1]]
        if len(pieces) >= 2:
            pieces = pieces[: most - count]
            count += len(pieces)
            yield pieces
            if count >= most:
                break
        if end_match is None:
            break
        pos = end_match.end()


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a] in " \t\"'(":
        a += 1
    while b > a and text[b - 1] in " \t.!?,;:\"'":
        b -= 1
    return a, b


def value_kinds(text: str, start: int = 0, end: int | None = None) -> frozenset[str]:
    """Which kinds of value ``text[start:end]`` holds: ``time``, ``price``, ``day``, ``number``."""
    end = len(text) if end is None else end
    return frozenset(kind for kind, pattern in (("time", _TIME), ("price", _MONEY), ("day", _DAY), ("number", _NUMBER))
                     if pattern.search(text, start, end) is not None)


def same_kinds(text: str, spans) -> bool:
    """Whether every ``(start, end)`` span of ``text`` holds the same kinds of value (:func:`value_kinds`); read
    span by span, up to the first that differs from the first."""
    first = None
    for start, end in spans:
        kinds = value_kinds(text, start, end)
        if first is None:
            first = kinds
        elif kinds != first:
            return False
    return True


def first_value(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Where the first time, price, day or figure in ``text[start:end]`` starts, or None."""
    end = len(text) if end is None else end
    found = [m.start() for m in (_TIME.search(text, start, end), _MONEY.search(text, start, end),
                                 _DAY.search(text, start, end), _NUMBER.search(text, start, end)) if m is not None]
    return min(found) if found else None


def figure(text: str, kind: str) -> float | None:
    """The figure of ``text`` a comparative of ``kind`` compares: ``price`` (the first amount of money), ``time``
    (the first time of day, in hours) or ``number`` (the first number); None when it has none."""
    if kind == "price":
        m = _MONEY.search(text)
        return None if m is None else _float(m.group(1) or m.group(2))
    if kind == "time":
        m = _TIME.search(text)
        if m is None:
            return None
        if m.group(3):
            hour = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "pm" else 0)
            return hour + int(m.group(2) or 0) / 60
        return int(m.group(4)) + int(m.group(5)) / 60
    m = _NUMBER.search(text)
    return None if m is None else _float(re.sub(r"[^\d.]", "", m.group()))


def comparing(words: str) -> str:
    """What the comparative in ``words`` compares: ``price``, ``time`` or ``number``."""
    found = set(re.findall(r"[a-z]+", words.lower()))
    if found & PRICE_WORDS:
        return "price"
    if found & TIME_WORDS:
        return "time"
    return "number"


def _float(digits: str) -> float | None:
    try:
        return float(digits.replace(",", ""))
    except ValueError:
        return None

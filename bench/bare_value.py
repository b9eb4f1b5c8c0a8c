"""Whether a referent is a bare value: a price, a time, a date, a quantity, and no thing.

A referent stands for what "it", "that" or "those" points at: an option, a
product, an appointment, an order. A referent made only of values says none
of that ("EUR", "9:10", "£38", "Friday", "3 kg") and, searched in the place of
the subject, loses it. :func:`is_bare_value` is the test ``bench/eval_business.py``
counts them with; tests/project/test_eval_business.py holds it to its definition.

A text is a bare value when it has at least one character that is not white
space and every token of it (a run of letters, a run of digits, or one other
character; "9am" is ``9`` and ``am``, "£38" is ``£`` and ``38``) is one of:

* digits, punctuation or a symbol (currency signs ``£ € $ ¥``, ``×``, ``%``,
  ``/``, ``:``, ``-``...): any token with no letter;
* a currency code of ISO 4217 (``EUR``, ``GBP``, ``USD``... as written in
  capitals; in any case unless the code is also an English word, so "top",
  "cad" and "try" are words and "TOP" a code) or a currency word (pounds,
  euros, dollars, pence, p, quid, grand, k);
* a unit of measure (kg, g, m, cm, mm, km, l, ml, sq ft, ft, mph, hours, hrs,
  min, mins, minutes, days, weeks, pcm, pp; head, person, guest and cover
  after "per": per head);
* a time (am, pm, noon, midnight, o'clock; the digits of 9:10 and 14:00 are
  already values) or a date (weekday and month names and their short forms,
  the ordinal suffixes st, nd, rd, th joined to a number: 21st);
* a word that carries no topic of its own between values: a, an, the, and,
  or, to, at, for, from, on, by, of, per, each, till, until, between, x.

So "TAP at 9:10 for 140 EUR" is not bare (TAP names the option), "9:10 or
8:40", "140 EUR", "£38 each" and "Monday 21st June" are. The scan is one
regular-expression pass over the text, linear in its length.
"""

from __future__ import annotations

import re

__all__ = ["CURRENCY_CODES", "VALUE_WORDS", "is_bare_value", "tokens"]

#: ISO 4217 alphabetic codes of the current currencies (and a few common recent ones)
CURRENCY_CODES = frozenset("""
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF
CHF CLP CNY COP CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD
HKD HNL HRK HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD
LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP
PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC SYP SZL THB TJS TMT
TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS VES VND VUV WST XAF XCD XOF XPF YER ZAR ZMW ZWL
""".split())
#: codes that are also English words: a code only when written in capitals
_CODES_THAT_ARE_WORDS = frozenset({"ALL", "BAM", "BOB", "CAD", "COP", "CUP", "ERN", "GEL", "MAD", "MOP", "PEN",
                                   "RON", "RUB", "SOS", "TOP", "TRY"})

_CURRENCY_WORDS = ("pound pounds euro euros eur dollar dollars cent cents pence penny p quid grand k "
                   "gbp usd")
_UNITS = ("kg kgs kilo kilos kilogram kilograms g gram grams mg lb lbs oz tonne tonnes ton tons t "
          "m metre metres meter meters cm mm km mi mile miles ft foot feet in inch inches yd yard yards "
          "sq sqm sqft m2 m² acre acres ha "
          "l litre litres liter liters ml cl gal gallon gallons pint pints "
          "mph kph kmh w kw kwh v "
          "h hr hrs hour hours min mins minute minutes s sec secs second seconds "
          "day days wk wks week weeks month months year years yr yrs night nights "
          "pcm pw pa pp ppl pax pc pcs dozen percent pct")
_TIMES = "am pm noon midday midnight o clock"
_DATES = ("monday tuesday wednesday thursday friday saturday sunday mon tue tues wed weds thu thur thurs fri sat "
          "sun mondays tuesdays wednesdays thursdays fridays saturdays sundays "
          "january february march april may june july august september october november december "
          "jan feb mar apr jun jul aug sep sept oct nov dec")
_GLUE = "a an the and or to at for from on by of per each till until between x"
#: lowercase words that are values (or glue between values); currency codes are matched apart
VALUE_WORDS = frozenset(f"{_CURRENCY_WORDS} {_UNITS} {_TIMES} {_DATES} {_GLUE}".split())
_ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
#: nouns that are a unit only after "per": per head, per person
_PER_UNITS = frozenset({"head", "person", "guest", "cover"})

#: a run of letters, a run of digits, or any other single character that is not white space
_TOKEN = re.compile(r"[^\W\d_]+|\d+|[^\s]")


def tokens(text: str) -> list[str]:
    """``text`` cut into runs of letters, runs of digits and single other characters (white space dropped)."""
    return _TOKEN.findall(text)


def _is_value_word(word: str, previous: str, joined: bool) -> bool:
    """Whether a run of letters is a value word, given the token before it ("" at the start) and whether the two
    touch (an ordinal suffix is one only on its number: "21st", not "21 st")."""
    if word.upper() in CURRENCY_CODES and (word.isupper() or word.upper() not in _CODES_THAT_ARE_WORDS):
        return True
    lower = word.lower()
    return (lower in VALUE_WORDS or (joined and previous.isdigit() and lower in _ORDINAL_SUFFIXES)
            or (previous.lower() == "per" and lower in _PER_UNITS))


def is_bare_value(text: str) -> bool:
    """Whether ``text`` is made only of digits, punctuation, currency, units, times and dates (see the module).

    An empty or all-white-space text is no referent at all, and not a bare value.
    """
    found = False
    previous, end = "", -1
    for token in _TOKEN.finditer(text):
        word = token.group()
        found = True
        if word[0].isalpha() and not _is_value_word(word, previous, token.start() == end):
            return False
        previous, end = word, token.end()
    return found

"""What the test modules share: the repository's paths, and (in the modules of this package) the real
service in a subprocess, a headless browser, hostile-input tools, stand-in embedders, a private
PostgreSQL and the values several test modules build on.

No test module imports another one; what two of them need lives here. ``tests/`` is on ``sys.path``
for the run (``pythonpath`` in pyproject.toml), so a test module anywhere under it imports these as
``from helpers import ROOT`` or ``from helpers.service import Service``.
"""

from __future__ import annotations

from pathlib import Path

#: the repository's root (the checkout)
ROOT = Path(__file__).resolve().parents[2]
#: the test suite's root
TESTS = ROOT / "tests"
#: the fixture packs: ``mini-1.0``, ``mini-1.1``, ``mini-2.0`` and ``slow``
PACKS = TESTS / "packs"
#: the smallest fixture pack
MINI = PACKS / "mini-1.0"
#: recorded documents the tests compare with (``tests/data``)
DATA = TESTS / "data"

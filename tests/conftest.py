"""Fixtures shared across the test suite.

The sentence-transformers model is loaded once per test run (``embedder``);
tests that need it are marked ``model`` by the fixture itself.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def embedder():
    from cleo_rules.retrieval.embed import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def default_pack():
    from cleo_rules import load_pack

    return load_pack()

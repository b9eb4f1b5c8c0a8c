"""The slots family: fillers for the corpus templates, and the generator's settings.

A ``slots`` file has no rules: its ``slots`` (named lists of fillers) and
``seed`` are the pack's ``slots`` and ``slots_seed``, which the corpus
generator (:mod:`cleo_rules.corpus.generate`) expands every rule's
``generate:`` templates with; its ``limit`` and ``cross`` templates are read
there, from the file the pack keeps.
"""

from __future__ import annotations

from ..kinds import FileKind
from .base import Build, Family

__all__ = ["SLOTS", "Slots"]


class Slots(Family):
    """``kind: slots``: its ``slots`` become the pack's ``slots``, its ``seed`` the pack's ``slots_seed``."""

    kind = FileKind.SLOTS
    items = None

    def read(self, src, build: Build) -> None:
        slots = build.data.setdefault("slots", {})
        if isinstance(src.data.get("slots"), dict):
            for name, fillers in src.data["slots"].items():
                if isinstance(fillers, list):
                    slots[name] = tuple(str(f) for f in fillers)
        if isinstance(src.data.get("seed"), int):
            build.data["slots_seed"] = src.data["seed"]


SLOTS = Slots()

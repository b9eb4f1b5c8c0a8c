"""Entry point target for the bundled pack (group ``cleo_rules.packs``)."""

from .resources import rules_dir


def pack_path():
    return rules_dir()

"""Rule packs: load (YAML with positions) -> validate (schema + lints) -> compile."""

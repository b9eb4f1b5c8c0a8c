"""Ingest records (a line of a JSON Lines file, read), as the ingest and record tests build them."""

from __future__ import annotations


def conversation(id, text="We compared two quotes for the van insurance renewal.", **extra):
    return {"type": "conversation", "id": id, "title": f"Title {id}", "date": "2024-02-19",
            "messages": [{"role": "user", "text": text}, {"role": "assistant", "text": "Noted."}], **extra}


def document(id, text="The boiler service costs eighty-five pounds.", **extra):
    return {"type": "document", "id": id, "title": f"Doc {id}", "date": "2024-02-01", "text": text, **extra}

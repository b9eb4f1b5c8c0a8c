"""A small memory (three conversations, two documents) for the tests of a whole turn."""

from __future__ import annotations

from cleo_rules.retrieval import MemoryStore

CONVERSATIONS = [
    ("van-quotes", "Comparing van insurance quotes", "2024-02-03", [
        {"role": "user", "text": "I have two quotes for insuring the van: Direct Line at 1,180 and Zego at 960."},
        {"role": "assistant", "text": "Zego is cheaper but excludes tools left in the van overnight."},
        {"role": "user", "text": "The tools matter, I keep about 3,000 pounds of kit in there."},
        {"role": "assistant", "text": "Then the Direct Line policy with tools cover is the safer choice."},
    ]),
    ("boiler", "Boiler engineer for the office", "2024-03-10", [
        {"role": "user", "text": "The office boiler keeps losing pressure. Which engineer should we call?"},
        {"role": "assistant", "text": "Last time Hughes Heating fixed the expansion vessel; Pipeline Gas is the other local firm."},
    ]),
    ("website", "Redesigning the website", "2023-11-21", [
        {"role": "user", "text": "The website looks dated and is slow on phones."},
        {"role": "assistant", "text": "A simpler template and compressed photos would fix most of the speed problem."},
    ]),
]
DOCUMENTS = [
    ("price-list", "Price list 2024", "2024-01-02",
     "Call-out fee 45 pounds. Hourly rate 38 pounds. Weekend work is charged at time and a half."),
    ("van-policy", "Van insurance policy schedule", "2024-02-20",
     "Direct Line commercial van policy. Tools in transit covered up to 5,000 pounds. Excess 250 pounds."),
]


def fill(store: MemoryStore) -> MemoryStore:
    for cid, title, date, messages in CONVERSATIONS:
        store.add_conversation(cid, title, date, messages)
    for did, title, date, text in DOCUMENTS:
        store.add_document(did, title, date, text)
    return store

# search arguments every memory backend refuses as misuse, and the error each raises
BAD_SEARCH_ARGUMENTS = [
    ({"query": "", "k": 3}, ValueError),
    ({"query": "x", "k": 0}, ValueError),
    ({"query": "x", "k": 2.5}, TypeError),
    ({"query": "x", "k": True}, TypeError),
    ({"query": "x", "sources": ("emails",)}, ValueError),
    ({"query": "x", "sources": ()}, ValueError),
    ({"query": None}, TypeError),
]

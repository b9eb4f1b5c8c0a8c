"""The request models: one definition judges a body and documents it.

In process, no service: for each JSON request body the service reads, a body
the OpenAPI document's schema accepts is read (or refused by the library's
own history reader, as ``invalid-history``), and a body it does not accept is
refused as ``invalid-request`` naming a field.
"""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cleo_rules.serve import ServeSettings, openapi
from cleo_rules.serve.body import (BadRequest, RequestModels, read_batch, read_classify, read_regression, read_turn,
                                   request_models, request_schemas)

SETTINGS = ServeSettings(max_message_chars=40, max_history=3, max_batch=3, max_k=7, default_k=2)


def read_whole_batch(body, settings):
    """A batch and each of its items, as the endpoint reads them (there a bad item's refusal is its answer)."""
    return [read_classify(item, settings, field=f"items[{n}]") for n, item in enumerate(read_batch(body, settings))]


READERS = {"ClassifyRequest": read_classify, "BatchRequest": read_whole_batch, "TurnRequest": read_turn,
           "RegressionRequest": read_regression}
COMPONENTS = openapi.document(SETTINGS, keys=False)["components"]["schemas"]


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": {"schemas": COMPONENTS}})


texts = st.text(max_size=45)
scalars = st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-2, 12, allow_nan=False) | texts
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=2),
                      max_leaves=5)
items = st.one_of(texts, st.fixed_dictionaries({}, optional={
    "role": st.sampled_from(["user", "assistant", "system", "robot"]),
    "content": st.one_of(texts, st.lists(st.one_of(texts, st.fixed_dictionaries({"type": st.just("text"),
                                                                                  "text": texts})), max_size=3))}),
    values)
fields = {
    "message": st.one_of(texts, values),
    "history": st.one_of(st.none(), st.lists(items, max_size=4), values),
    "k": st.one_of(st.none(), st.integers(-1, 9), st.sampled_from([2.0, 2.5, True, "3"]), values),
    "expect": st.one_of(st.sampled_from(["skip", "correction", "follow_up", "substantive", "nope"]), values),
    "write": st.one_of(st.booleans(), values),
    "items": st.one_of(st.lists(values, max_size=4), values),
    "extra": values,
}
bodies = st.one_of(values, st.fixed_dictionaries({}, optional=fields))


def test_every_request_component_is_generated_from_its_model():
    generated = request_schemas(SETTINGS)
    assert set(RequestModels._fields) | {"History", "HistoryItem"} == set(generated)
    for name, schema in generated.items():
        assert COMPONENTS[name] == schema, name
    assert COMPONENTS["ClassifyRequest"]["properties"]["message"]["maxLength"] == 40
    assert COMPONENTS["TurnRequest"]["properties"]["k"]["anyOf"][0]["maximum"] == 7
    assert request_models(SETTINGS) is request_models(ServeSettings(max_message_chars=40, max_history=3, max_batch=3,
                                                                    max_k=7, default_k=2))  # built once


@pytest.mark.parametrize("name", RequestModels._fields)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_a_body_is_read_exactly_when_its_schema_accepts_it(name, body):
    valid = validator(name).is_valid(body)
    event("valid" if valid else "invalid")
    try:
        READERS[name](body, SETTINGS)
    except BadRequest as exc:
        if valid:  # only the library's history reader may refuse what the schema allows
            assert exc.name == "invalid-history", (body, exc)
        else:
            assert exc.name == "invalid-request" and exc.extra.get("code") is None, (body, exc)
            field = exc.extra.get("field")
            assert field is None or isinstance(field, str)
    else:
        assert valid, body


@pytest.mark.parametrize("read, body, field, words", [
    (read_classify, {"mesage": "typo", "message": 3}, "mesage", "unknown field 'mesage'"),
    (read_classify, {"history": []}, "message", "message is required"),
    (read_classify, {"message": "x" * 41}, "message", "41 characters; the limit is 40"),
    (read_classify, {"message": "ok", "history": ["a", "b", "c", "d"]}, "history", "4 items; the limit is 3"),
    (read_classify, {"message": "ok", "history": [7]}, "history[0]", "a string or an object, not a number"),
    (read_classify, {"message": "ok", "history": [{"role": "user", "content": ["x" * 30, {"text": "y" * 11}]}]},
     "history[0].content", "41 characters of text; the limit is 40"),
    (read_turn, {"message": "ok", "k": 8}, "k", "at most 7, not 8"),
    (read_turn, {"message": "ok", "k": True}, "k", "an integer, not a boolean"),
    (read_regression, {"message": "ok", "expect": "maybe"}, "expect", "one of 'skip', 'correction'"),
    (read_regression, {"message": "ok", "expect": "skip", "write": "yes"}, "write", "true or false"),
    (read_batch, {"items": [{}] * 4}, "items", "4 items; the limit is 3"),
    (read_batch, [], None, "the body must be a JSON object, not an array"),
])
def test_a_refusal_names_its_field_and_says_what_it_must_be(read, body, field, words):
    with pytest.raises(BadRequest) as refused:
        read(body, SETTINGS)
    assert refused.value.name == "invalid-request" and refused.value.extra.get("field") == field
    assert words in refused.value.detail


def test_what_a_reader_gives_back():
    assert read_turn({"message": "ok", "k": 3.0}, SETTINGS) == ("ok", [], 3)  # JSON does not tell 3 from 3.0
    assert read_turn({"message": "ok", "k": None}, SETTINGS) == ("ok", [], 2)  # the default
    assert read_regression({"message": "ok", "expect": "follow_up"}, SETTINGS) == ("ok", [], "follow_up", False)
    assert type(read_regression({"message": "ok", "expect": "skip"}, SETTINGS)[2]) is str
    history = ["Which van?", {"role": "assistant", "content": [{"type": "text", "text": "Zego."}]}]
    assert read_classify({"message": "Tell me more.", "history": history}, SETTINGS) == ("Tell me more.", history)
    assert read_batch({"items": [1, {"x": 2}]}, SETTINGS) == [1, {"x": 2}]  # each item judged on its own, later

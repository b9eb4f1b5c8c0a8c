"""How ``bench/choose_settings.py`` picks a setting's value: on all sets, on the others (leave-one-dataset-out),
and when it flags a setting not to ship. Read from the script's file, as it is run."""

from __future__ import annotations

import importlib.util
import sys

from hypothesis import given
from hypothesis import strategies as st

from helpers import ROOT


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


choose_settings = _load("choose_settings")
choose, leave_one_out, below_raw = choose_settings.choose, choose_settings.leave_one_out, choose_settings.below_raw

VALUES = (0, 20, 40, 80, 120)
hit_maps = st.fixed_dictionaries({v: st.integers(0, 30) for v in VALUES})


def test_the_value_with_most_hits_is_chosen():
    assert choose({0: 5, 20: 9, 40: 7}, 40) == 20


def test_a_tie_goes_to_the_shipped_value():
    assert choose({0: 9, 20: 9, 40: 9, 80: 3}, 40) == 40
    assert choose({0: 9, 80: 9, 120: 9}, 80) == 80


def test_a_tie_without_the_shipped_value_goes_to_the_nearest_then_the_smaller():
    assert choose({0: 9, 20: 1, 40: 9, 120: 9}, 80) == 40  # 40 and 120 both 40 away: the smaller
    assert choose({0: 9, 20: 1, 100: 9}, 80) == 100


@given(hit_maps, st.sampled_from(VALUES))
def test_choose_returns_a_best_value_and_the_shipped_one_when_it_is_best(hits, shipped):
    chosen = choose(hits, shipped)
    assert hits[chosen] == max(hits.values())
    if hits[shipped] == max(hits.values()):
        assert chosen == shipped


def test_each_set_gets_the_value_chosen_on_the_others():
    hits = {"a": {0: 10, 80: 0}, "b": {0: 0, 80: 4}, "c": {0: 0, 80: 4}}
    # on all three, 0 wins (10 against 8); left out, a's own hits no longer count
    assert choose({v: sum(h[v] for h in hits.values()) for v in (0, 80)}, 80) == 0
    assert leave_one_out(hits, 80) == {"a": 80, "b": 0, "c": 0}


@given(st.dictionaries(st.sampled_from(("canard", "gecor", "cast", "sgd")), hit_maps, min_size=2),
       st.sampled_from(VALUES))
def test_leave_one_out_ignores_the_left_out_set(hits, shipped):
    chosen = leave_one_out(hits, shipped)
    assert set(chosen) == set(hits)
    for left in hits:
        changed = {name: ({v: 1000 * (v == 0) for v in VALUES} if name == left else h) for name, h in hits.items()}
        assert leave_one_out(changed, shipped)[left] == chosen[left]


def test_a_set_below_raw_with_its_left_out_value_is_named():
    hits = {"a": {0: 10, 80: 12}, "b": {0: 5, 80: 3}}
    raw = {"a": 11, "b": 4}
    assert below_raw(hits, raw, {"a": 80, "b": 80}) == ["b"]
    assert below_raw(hits, raw, {"a": 0, "b": 0}) == ["a"]
    assert below_raw(hits, {"a": 10, "b": 5}, {"a": 0, "b": 0}) == []  # equal to raw is not below it


def test_the_task_sets_domains_below_raw_are_named_with_their_difference():
    domains = ["Banks", "Banks", "Buses", "Buses", "Music"]
    raw = [True, True, False, True, False]
    hits = [True, False, True, False, True]
    assert choose_settings.domains_below(domains, hits, raw) == "1 of 3 (Banks -1)"
    assert choose_settings.domains_below(domains, raw, raw) == "0 of 3"

"""R2.4's band as operator settings (``SmartTuning.fast_enough_ratio`` and
``fast_enough_under_s``; live ``ROUTING_FAST_ENOUGH_RATIO`` / ``_UNDER_S``): the
defaults are the product's rule (within 2x of the fastest, or under 1 s); a wider band
lets a cheaper, slower endpoint take the traffic."""

from __future__ import annotations

from routing.core import DEFAULT_TUNING, SmartTuning
from routing.core.probe import probe_relevant

from .factories import MODEL, endpoint, features, ids, plan, speed

CHEAP = endpoint(1, "cheap", price_input=0.08)  # 3.1 s on a 150k agent turn
FAST = endpoint(2, "fast", price_input=0.2)  # 1.0 s
LONG = features(prompt=150_000)
BUCKET = ">128k"


def _first(tuning: SmartTuning, cheap_s: float = 3.1) -> int:
    summary = speed({1: cheap_s, 2: 1.0}, bucket=BUCKET)
    return ids(plan([CHEAP, FAST], summary, request=LONG, tuning=tuning))[0]


def test_the_defaults_are_r24() -> None:
    assert (DEFAULT_TUNING.fast_enough_ratio, DEFAULT_TUNING.fast_enough_under_s) == (2.0, 1.0)
    assert _first(DEFAULT_TUNING) == 2  # 3.1 s is more than 2 x 1.0 s
    assert _first(DEFAULT_TUNING, cheap_s=1.9) == 1  # within 2x: cheapest fast enough


def test_a_wider_ratio_lets_the_cheaper_slower_endpoint_in() -> None:
    assert _first(SmartTuning(fast_enough_ratio=3.5)) == 1
    assert _first(SmartTuning(fast_enough_ratio=3.0)) == 2  # 3.1 s is still above 3 x 1.0 s


def test_an_absolute_floor_lets_it_in_too() -> None:
    assert _first(SmartTuning(fast_enough_under_s=4.0)) == 1
    assert _first(SmartTuning(fast_enough_under_s=3.0)) == 2


def _first_at(tuning: SmartTuning, prompt: int, bucket: str) -> int:
    summary = speed({1: 3.1, 2: 1.0}, bucket=bucket)
    return ids(plan([CHEAP, FAST], summary, request=features(prompt=prompt), tuning=tuning))[0]


def test_a_floor_for_long_prompts_leaves_the_short_buckets_to_r24() -> None:
    long_floor = SmartTuning(fast_enough_under_s_long=4.0)
    assert DEFAULT_TUNING.fast_enough_under_s_long is None  # unset: R2.4's 1 s everywhere
    assert _first_at(long_floor, 150_000, ">128k") == 1
    assert _first_at(long_floor, 40_000, "32k-128k") == 1
    assert _first_at(long_floor, 20_000, "8k-32k") == 2  # still 3.1 s against 2 x 1.0 s
    assert _first_at(long_floor, 2_000, "<8k") == 2
    assert _first_at(SmartTuning(fast_enough_under_s_long=3.0), 150_000, ">128k") == 2
    # the long floor replaces the short one from 32k up, whichever is larger
    both = SmartTuning(fast_enough_under_s=4.0, fast_enough_under_s_long=1.0)
    assert (_first_at(both, 150_000, ">128k"), _first_at(both, 20_000, "8k-32k")) == (2, 1)


def test_probes_by_need_use_the_long_floor_too() -> None:
    """The cheap endpoint is the pick under a 4 s long floor, so its probe is needed; the
    fast, dearer one sets no bar then (a slowdown there moves nothing) and is skipped."""
    summary = speed({1: 3.1, 2: 1.0}, bucket=BUCKET)
    model = MODEL
    assert probe_relevant(FAST, 150_000, model, [CHEAP, FAST], summary)
    assert not probe_relevant(FAST, 150_000, model, [CHEAP, FAST], summary, under_s_long=4.0)
    assert probe_relevant(CHEAP, 150_000, model, [CHEAP, FAST], summary, under_s_long=4.0)

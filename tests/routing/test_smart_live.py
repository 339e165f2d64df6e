"""Smart routing end to end: real calls through the gateway to the emulator teach it
each endpoint's speed per prompt-size bucket, and its choices follow (R2)."""

import time

import pytest
from django.conf import settings

from ..support import (
    TEST_MODEL,
    SubprocessGateway,
    wait_background_idle,
    wait_finished_rows,
    wait_learnt,
)

pytestmark = pytest.mark.django_db(transaction=True)
LONG = [{"role": "user", "content": "x" * 140_000}]  # ~35k tokens: the 32k-128k bucket


def fresh(messages: list[dict]) -> list[dict]:
    """The same size, a new prefix: no provider has it cached (cache hits prefill faster)."""
    first = messages[0]
    return [{**first, "content": f"{time.time_ns()} {first['content']}"}, *messages[1:]]


SHORT = [{"role": "user", "content": "hello"}]


def _served(client, messages, **provider) -> str:
    extra = {"provider": provider} if provider else {}
    reply = client.chat.completions.create(
        model=TEST_MODEL, messages=messages, max_tokens=2, extra_body=extra
    )
    return reply.model_extra["provider"]


def _learn_speeds(client, emulator) -> None:
    """alpha (cheapest) prefills slowly: ~1.8 s at 35k tokens; bravo and charlie are fast.
    Measure each one three times with customer-pinned calls (real speed samples)."""
    emulator.control("alpha", prefill_tokens_per_s=20_000)
    for slug in ("alpha", "bravo", "charlie"):
        for messages in (LONG, SHORT):
            for _ in range(3):
                pinned = {"order": [slug], "allow_fallbacks": False}
                assert _served(client, fresh(messages), **pinned) == slug
    wait_finished_rows(18)
    wait_learnt()  # the speed snapshot refreshes


def test_slow_cheapest_loses_long_prompts_keeps_short_ones(client, emulator):
    assert _served(client, LONG) == "alpha"  # no speed data yet: cheapest (R2.8)
    _learn_speeds(client, emulator)
    assert _served(client, LONG) == "bravo"  # alpha too slow here; bravo cheapest fast enough
    assert _served(client, SHORT) == "alpha"  # short prompts: alpha is fast enough


def test_the_operator_can_widen_the_fast_enough_band(client, emulator):
    """ROUTING_FAST_ENOUGH_UNDER_S (R2.4's "under 1 second", an operator setting): with
    a 5 s floor alpha, the cheapest, is fast enough for long prompts too."""
    _learn_speeds(client, emulator)
    assert _served(client, fresh(LONG)) == "bravo"
    conf = settings.UBERLLM
    saved = conf["ROUTING_FAST_ENOUGH_UNDER_S"]
    conf["ROUTING_FAST_ENOUGH_UNDER_S"] = 5.0
    try:
        assert _served(client, fresh(LONG)) == "alpha"
    finally:
        conf["ROUTING_FAST_ENOUGH_UNDER_S"] = saved
    assert _served(client, fresh(LONG)) == "bravo"


def test_the_operator_can_set_a_longer_floor_for_long_prompts_only(client, emulator):
    """ROUTING_FAST_ENOUGH_UNDER_S_LONG (R2.4's absolute bound from 32k tokens up): at 5 s
    alpha (~1.8 s at 35k, the cheapest) takes the long prompt; at 1 s it does not."""
    _learn_speeds(client, emulator)
    conf = settings.UBERLLM
    try:
        conf["ROUTING_FAST_ENOUGH_UNDER_S_LONG"] = 5.0
        assert _served(client, fresh(LONG)) == "alpha"
        assert _served(client, SHORT) == "alpha"
        conf["ROUTING_FAST_ENOUGH_UNDER_S_LONG"] = 1.0
        assert _served(client, fresh(LONG)) == "bravo"
    finally:
        conf["ROUTING_FAST_ENOUGH_UNDER_S_LONG"] = None
    assert _served(client, fresh(LONG)) == "bravo"


def test_a_provider_that_got_faster_is_noticed_once_its_data_is_stale(client, emulator):
    """R2.6 / issue 10: alpha (the cheapest) is too slow for long prompts, so it gets none
    and its long-prompt data ages. Once that data is stale (SPEED_STALE_AFTER_S) it is
    explored; alpha got faster meanwhile, the fresh sample restarts its window, and the
    long prompts move to it."""
    _learn_speeds(client, emulator)
    assert _served(client, fresh(LONG)) == "bravo"
    emulator.control("alpha", prefill_tokens_per_s=400_000)  # now faster than bravo
    conf = settings.UBERLLM
    try:
        conf["SPEED_STALE_AFTER_S"] = 0.5
        time.sleep(0.6)
        wait_learnt()
        conf["EXPLORATION_RATE"] = 1.0  # the draw always explores; which endpoint is the rule
        assert _served(client, fresh(LONG)) == "alpha"  # stale and cheaper: explored
        conf["EXPLORATION_RATE"] = 0.0
        wait_finished_rows(20)
        wait_learnt()
        assert _served(client, fresh(LONG)) == "alpha"  # cheapest fast enough now
    finally:
        conf["EXPLORATION_RATE"] = 0.0
        conf.pop("SPEED_STALE_AFTER_S", None)


def test_second_gateway_process_sees_what_the_first_learnt(client, emulator, tenant):
    from openai import OpenAI

    _learn_speeds(client, emulator)
    second = SubprocessGateway().start()
    try:
        with OpenAI(base_url=second.api_url, api_key=tenant.key, max_retries=0) as other:
            assert _served(other, LONG) == "bravo"
            assert _served(other, SHORT) == "alpha"
    finally:
        second.stop()


def test_refusing_endpoint_skipped_then_tried_again_after_its_window(client, emulator):
    settings.UBERLLM["UNUSABLE_WINDOW_S"] = 0.5
    try:
        emulator.control("alpha", status_override=503)
        assert _served(client, fresh(SHORT)) == "bravo"
        assert _served(client, fresh(SHORT)) == "bravo"
        assert len(emulator.log("alpha")) == 1  # skipped while unusable
        emulator.control("alpha", status_override=None)
        time.sleep(0.6)
        # (a fresh prompt: bravo would hold a repeated one in its cache, and win on price)
        assert _served(client, fresh(SHORT)) == "alpha"
    finally:
        settings.UBERLLM["UNUSABLE_WINDOW_S"] = 900.0


def test_conversation_stays_where_its_prefix_is_cached(client, emulator):
    settings.UBERLLM["UNUSABLE_WINDOW_S"] = 0.3
    try:
        system = {"role": "system", "content": "You are a coding agent. " + "ctx " * 20_000}
        turn1 = [system, {"role": "user", "content": "first question"}]
        emulator.control("alpha", status_override=503)
        assert _served(client, turn1) == "bravo"  # alpha down: the conversation starts on bravo
        emulator.control("alpha", status_override=None)
        time.sleep(0.4)
        wait_finished_rows(1)
        turn2 = [
            *turn1,
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": "second question"},
        ]
        # bravo holds ~20k cached tokens: 20k x $0.02 beats alpha's uncached 20k x $0.10.
        assert _served(client, turn2) == "bravo"
        assert emulator.log("bravo")[-1]["cached_tokens"] > 15_000
        other = [
            {"role": "system", "content": "Another agent. " + "ctx " * 20_000},
            {"role": "user", "content": "q"},
        ]
        assert _served(client, other) == "alpha"  # a new conversation: alpha is cheapest
    finally:
        settings.UBERLLM["UNUSABLE_WINDOW_S"] = 900.0


def test_consecutive_refusals_lengthen_the_unusable_window(client, emulator):
    conf = settings.UBERLLM
    saved = dict(conf)
    conf.update(UNUSABLE_FIRST_WINDOW_S=0.4, UNUSABLE_WINDOW_S=30.0)
    try:
        for slug in ("alpha", "bravo"):  # both measured: alpha is the cheapest fast enough
            for _ in range(3):
                _served(client, fresh(SHORT), order=[slug], allow_fallbacks=False)
        wait_learnt()
        emulator.reset()
        emulator.control("alpha", status_override=503)
        assert _served(client, fresh(SHORT)) == "bravo"  # 1st refusal: out for 0.4 s
        time.sleep(0.5)
        assert _served(client, fresh(SHORT)) == "bravo"  # tried again, refused: 0.8 s
        assert len(emulator.log("alpha")) == 2
        time.sleep(0.5)
        assert _served(client, fresh(SHORT)) == "bravo"  # still inside the longer window
        assert len(emulator.log("alpha")) == 2
        emulator.control("alpha", status_override=None)
        time.sleep(0.6)
        assert _served(client, fresh(SHORT)) == "alpha"  # served: the streak ends
        wait_background_idle()
        emulator.control("alpha", status_override=503)
        assert _served(client, fresh(SHORT)) == "bravo"  # a new streak starts at 0.4 s
        time.sleep(0.5)
        emulator.control("alpha", status_override=None)
        assert _served(client, fresh(SHORT)) == "alpha"
    finally:
        conf.clear()
        conf.update(saved)


def test_a_turn_cached_where_the_cached_speed_is_unknown_is_explored_there(client, emulator):
    """Round 10: alpha (cheapest) is too slow for uncached long prompts and nothing is
    known of its cache reads (its cached window is empty). A conversation begun there
    (pinned) sends its next turn there as exploration: the only request that can measure
    alpha's cached speed; judged by its uncached speed it would have gone to bravo."""
    settings.UBERLLM["EXPLORATION_RATE"] = 0.05
    try:
        _learn_speeds(client, emulator)
        system = {"role": "system", "content": "You are a coding agent. " + "ctx " * 36_000}
        turn1 = [system, {"role": "user", "content": "first question"}]
        assert _served(client, turn1, order=["alpha"], allow_fallbacks=False) == "alpha"
        wait_finished_rows(19)
        wait_learnt()
        turn2 = [
            *turn1,
            {"role": "assistant", "content": "answer"},
            {"role": "user", "content": "second question"},
        ]
        assert _served(client, turn2) == "alpha"
        assert emulator.log("alpha")[-1]["cached_tokens"] > 30_000
        # a new conversation of the same size is uncached everywhere: bravo, as before.
        # Random exploration off: this key's first turns now count as conversations
        # (round 23), whose follow-up cache reads are thin everywhere, so a 5 % draw may
        # explore any endpoint (CI saw alpha once).
        settings.UBERLLM["EXPLORATION_RATE"] = 0.0
        assert _served(client, fresh(turn1)) == "bravo"
    finally:
        settings.UBERLLM["EXPLORATION_RATE"] = 0.0


def test_a_provider_refusing_for_hours_still_answers_an_upstream_error(client, emulator, market):
    """Round 13: after 1,025 refusals in a row the unusable window's 2 ** strikes
    overflowed a float; from then on every failed call at that provider answered a 500
    "Internal gateway error" instead of the provider's refusal."""
    import openai

    from routing.memory import memory

    alpha = market["alpha"].id
    emulator.control("alpha", status_override=503)
    marks = memory.knowledge.marks
    marks.merge(alpha, 0.0, 5_000)  # as after hours of refusals (a streak only grows)
    with pytest.raises(openai.APIStatusError) as refused:
        _served(client, fresh(SHORT), order=["alpha"], allow_fallbacks=False)
    assert refused.value.status_code == 503
    assert refused.value.body["code"] == "upstream_overloaded"
    assert marks.strikes(alpha) == 5_001
    assert marks.until(alpha) > time.time() + 0.9 * settings.UBERLLM["UNUSABLE_WINDOW_S"]

import pytest

from routing.core import RetryPolicy, classify_failure, is_retryable
from routing.core.retry import marks_unusable

from .factories import endpoint, plan

SIX = plan([endpoint(i, price_input=0.1 * i) for i in range(1, 7)])


def _run_attempts(policy, route_plan):
    attempts = []
    while (choice := policy.next_choice(route_plan, attempts)) is not None:
        attempts.append(choice.endpoint.endpoint_id)
    return attempts


def test_retries_follow_the_plan_never_repeat_and_stop_at_four():
    assert _run_attempts(RetryPolicy(), SIX) == [1, 2, 3, 4]
    assert RetryPolicy().schedule(SIX) == SIX.choices[:4]


def test_retries_stop_when_the_plan_is_exhausted():
    two = plan([endpoint(1), endpoint(2)])
    assert _run_attempts(RetryPolicy(max_attempts=4), two) == [1, 2]


def test_next_choice_skips_endpoints_already_tried_out_of_order():
    assert RetryPolicy().next_choice(SIX, [2, 1]).endpoint.endpoint_id == 3
    assert RetryPolicy(max_attempts=2).next_choice(SIX, [5, 6]) is None


@pytest.mark.parametrize(
    ("status", "kind", "retry", "mark"),
    [
        (429, "http", True, False),  # load shed: teaches a cap, never marks (issue 43)
        (500, "http", True, True),
        (502, "http", True, True),
        (503, "http", True, True),
        (408, "http", True, True),
        (401, "http", True, True),
        (403, "http", True, True),
        (404, "http", True, True),
        (400, "http", True, False),
        (413, "http", True, False),
        (422, "http", True, False),
        (None, "connect", True, True),
        (None, "timeout", True, True),
        (None, "stream_interrupted", False, False),
        (200, "stream_interrupted", False, False),
        (None, "client_cancelled", False, False),
    ],
)
def test_failure_table(status, kind, retry, mark):
    verdict = classify_failure(status, kind)
    assert (verdict.retry, verdict.mark_unusable) == (retry, mark)
    assert is_retryable(status, kind) is retry
    assert marks_unusable(status, kind) is mark


@pytest.mark.parametrize(("status", "kind"), [(None, "http"), (200, "http"), (500, "boom")])
def test_impossible_failures_are_rejected(status, kind):
    with pytest.raises(ValueError):
        classify_failure(status, kind)

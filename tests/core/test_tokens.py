import pytest

from routing.core import OutputEstimator, TokenEstimator


@pytest.mark.parametrize(
    ("messages", "tokens"),
    [
        ([], 0),
        ([{"role": "user", "content": ""}], 4),
        ([{"role": "user", "content": "abcd"}], 5),
        ([{"role": "user", "content": "abcde"}], 6),  # ceil(5 / 4) + 4
        ([{"role": "system", "content": "x" * 400}, {"role": "user", "content": "hi"}], 104 + 5),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "abcd"},
                        {"type": "image_url", "image_url": {"url": "data:..."}},
                        {"type": "text", "text": "efgh"},
                    ],
                }
            ],
            6,
        ),
        ([{"role": "assistant", "content": None, "tool_calls": []}], 4),
    ],
)
def test_estimate_is_chars_over_four_plus_four_per_message(messages, tokens):
    assert TokenEstimator.estimate(messages) == tokens


def test_calibration_is_an_ema_of_the_reported_ratio_bounded():
    estimator = TokenEstimator(alpha=0.5)
    assert estimator.ratio("m", 1_000) == 1.0
    estimator.observe("m", estimated=1_000, reported=1_200)
    assert estimator.ratio("m", 1_000) == pytest.approx(1.2)  # first observation sets it
    estimator.observe("m", estimated=1_000, reported=1_000)
    assert estimator.ratio("m", 1_000) == pytest.approx(1.1)
    estimator.observe("other", estimated=100, reported=10_000)
    assert estimator.ratio("other", 100) == 2.0
    estimator.observe("tiny", estimated=1_000, reported=1)
    assert estimator.ratio("tiny", 1_000) == 0.5
    messages = [{"role": "user", "content": "x" * 3_984}]  # raw estimate 1,000
    assert estimator.estimate_for("m", messages) == 1_100
    assert estimator.estimate_for("unseen", messages) == 1_000


def test_calibration_is_per_prompt_size_bucket():
    """A ratio learnt on tiny prompts (where a chat template's overhead weighs most)
    once moved a 108k-token estimate by -20%; each size bucket now learns its own."""
    estimator = TokenEstimator(alpha=0.5)
    for _ in range(10):
        estimator.observe("m", estimated=50, reported=40)
    assert estimator.ratio("m", 50) == pytest.approx(0.8)
    long = [{"role": "user", "content": "x" * (108_524 * 4)}]  # raw estimate 108,528
    assert estimator.ratio("m", 108_528) == 1.0
    assert estimator.estimate_for("m", long) == 108_528
    estimator.observe("m", estimated=108_528, reported=110_000)
    assert estimator.estimate_for("m", long) == 110_000
    assert estimator.ratio("m", 50) == pytest.approx(0.8)  # untouched by the long prompt


def test_calibration_ignores_empty_observations():
    estimator = TokenEstimator()
    estimator.observe("m", estimated=0, reported=10)
    assert estimator.ratio("m", 0) == 1.0


def test_output_estimate_defaults_to_256_and_is_capped_by_max_tokens():
    outputs = OutputEstimator(alpha=0.5)
    assert outputs.expected("m", "<8k", None) == 256
    assert outputs.expected("m", "<8k", 100) == 100
    outputs.observe("m", "<8k", 1_000)
    outputs.observe("m", "<8k", 500)
    assert outputs.expected("m", "<8k", None) == 750
    assert outputs.expected("m", ">128k", None) == 256  # per bucket
    assert outputs.expected("m", "<8k", 0) == 750  # max_tokens 0 / missing does not cap

"""Prompt and output token estimates without a tokenizer download.

Prompt: for each message, ceil(characters of its text / 4) + 4 (the emulator's
formula; ``content`` is a string or a list of parts whose "text" fields count).
Calibrated per model and prompt-size bucket (``types.bucket_for`` of the raw estimate)
by an exponential moving average of reported / estimated prompt tokens, bounded to
[0.5, 2.0]: a ratio learnt on short prompts (chat templates weigh more there) never
moves a long prompt's estimate, whose bucket starts uncalibrated (1.0).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .types import bucket_for

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
DEFAULT_OUTPUT_TOKENS = 256


def content_chars(content: Any) -> int:
    """Characters of a message's text: a string, or the "text" of a list of parts."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(
            len(part["text"])
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return 0


def message_tokens(message: Mapping[str, Any]) -> int:
    return math.ceil(content_chars(message.get("content")) / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE


def _ema(previous: float | None, sample: float, alpha: float) -> float:
    return sample if previous is None else previous + alpha * (sample - previous)


class TokenEstimator:
    """Raw estimate from characters, calibrated per (model, prompt-size bucket) by
    observed usage."""

    def __init__(self, alpha: float = 0.2, min_ratio: float = 0.5, max_ratio: float = 2.0):
        self.alpha = alpha
        self.min_ratio = min_ratio
        self.max_ratio = max_ratio
        self._ratio_by_key: dict[tuple[str, str], float] = {}

    @staticmethod
    def estimate(messages: Iterable[Mapping[str, Any]]) -> int:
        """Raw (uncalibrated) prompt-token estimate."""
        return sum(message_tokens(message) for message in messages)

    def estimate_for(self, model: str, messages: Iterable[Mapping[str, Any]]) -> int:
        """Estimate calibrated with the ratio observed for the model at its size."""
        raw = self.estimate(messages)
        return round(raw * self.ratio(model, raw))

    def ratio(self, model: str, raw_tokens: int) -> float:
        """reported / raw estimate for the model's prompts in the bucket of a
        ``raw_tokens`` prompt (1.0 until observed there)."""
        return self._ratio_by_key.get((model, bucket_for(max(raw_tokens, 0))), 1.0)

    def observe(self, model: str, estimated: int, reported: int) -> None:
        """Record a call: ``estimated`` = the raw estimate(), ``reported`` = the
        provider's prompt_tokens; learnt in the raw estimate's bucket. The first
        observation there sets the ratio directly."""
        if estimated <= 0 or reported <= 0:
            return
        key = (model, bucket_for(estimated))
        sample = min(max(reported / estimated, self.min_ratio), self.max_ratio)
        ratio = _ema(self._ratio_by_key.get(key), sample, self.alpha)
        self._ratio_by_key[key] = min(max(ratio, self.min_ratio), self.max_ratio)


class OutputEstimator:
    """Recent average completion tokens per (model, bucket), an EMA."""

    def __init__(self, alpha: float = 0.2, default_tokens: int = DEFAULT_OUTPUT_TOKENS):
        self.alpha = alpha
        self.default_tokens = default_tokens
        self._average: dict[tuple[str, str], float] = {}

    def expected(self, model: str, bucket: str, max_tokens: int | None = None) -> int:
        """Expected completion tokens: the EMA (default when unknown), capped by the
        request's max_tokens, at least 1."""
        average = self._average.get((model, bucket), float(self.default_tokens))
        expected = max(1, math.ceil(average))
        if max_tokens is not None and max_tokens > 0:
            expected = min(expected, max_tokens)
        return expected

    def observe(self, model: str, bucket: str, completion_tokens: int) -> None:
        if completion_tokens < 0:
            return
        key = (model, bucket)
        self._average[key] = _ema(self._average.get(key), float(completion_tokens), self.alpha)


class OutputLengths:
    """How long each endpoint's replies run against the model's, per (model, endpoint):
    the average served completion tokens of the endpoint over the model's (a plain mean
    over the first 1/alpha calls, an EMA after). A provider that rambles bills more
    output for the same request, so the cost of sending a request there is priced with
    its factor (``factors``). A factor is reported only once it rests on ``min_calls``
    calls and is at least ``threshold`` away from 1: reply lengths vary widely from call
    to call, and a small or young difference is noise."""

    def __init__(self, alpha: float = 0.01, min_calls: int = 100, threshold: float = 0.3) -> None:
        self.alpha = alpha
        self.min_calls = min_calls
        self.threshold = threshold
        self._average: dict[tuple[str, int], float] = {}
        self._calls: dict[tuple[str, int], int] = {}
        self._model_average: dict[str, float] = {}
        self._model_calls: dict[str, int] = {}

    def observe(self, model: str, endpoint_id: int, served: int) -> None:
        """One complete reply of ``served`` completion tokens from ``endpoint_id``."""
        if served <= 0:
            return
        key = (model, endpoint_id)
        calls = self._calls[key] = self._calls.get(key, 0) + 1
        self._average[key] = _ema(self._average.get(key), served, max(self.alpha, 1 / calls))
        calls = self._model_calls[model] = self._model_calls.get(model, 0) + 1
        weight = max(self.alpha, 1 / calls)
        self._model_average[model] = _ema(self._model_average.get(model), served, weight)

    def factors(self, model: str) -> dict[int, float]:
        """endpoint_id -> its replies' length over the model's, where that is known."""
        usual = self._model_average.get(model)
        if not usual:
            return {}
        found = {}
        for (slug, endpoint_id), average in self._average.items():
            factor = average / usual
            if (
                slug == model
                and self._calls[(slug, endpoint_id)] >= self.min_calls
                and abs(factor - 1.0) >= self.threshold
            ):
                found[endpoint_id] = factor
        return found

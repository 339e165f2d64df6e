"""Neutral chat types shared by the wire formats (no Django, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningSignature:
    """The provider's signature of the reasoning so far (Anthropic's thinking block
    ``signature``): sent back with the reasoning on the next turn, it lets the provider
    accept its own thinking. On OpenAI-shaped chunks and messages it travels as the
    ``reasoning_signature`` field (an UberLLM extension; OpenAI clients ignore it)."""

    signature: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    index: int
    arguments: str  # a fragment of the arguments' JSON text


@dataclass(frozen=True, slots=True)
class Finish:
    reason: str  # OpenAI's finish_reason: stop, length, tool_calls, content_filter, error


@dataclass(frozen=True, slots=True)
class UsageReport:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None
    cache_write_tokens: int = 0  # part of prompt_tokens, like cached_tokens


@dataclass(frozen=True, slots=True)
class StreamError:
    message: str


ChatEvent = (
    TextDelta
    | ReasoningDelta
    | ReasoningSignature
    | ToolCallStart
    | ToolCallDelta
    | Finish
    | UsageReport
    | StreamError
)


@dataclass(frozen=True, slots=True)
class ProtocolError(Exception):
    """A request a wire format refuses: HTTP status, message, the field at fault."""

    status: int
    message: str
    param: str | None = None

"""Token estimation and the deterministic filler reply.

The emulator and the gateway estimate prompt size the same way, from characters:
each message costs ``ceil(chars / 4) + 4`` tokens, where ``chars`` is the length of
its ``content`` (a string, or the ``text`` of every part of a content-part list).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

MESSAGE_OVERHEAD_TOKENS = 4
CHARS_PER_TOKEN = 4

_FILLER_TEXT = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat"
)

# Reply token 0 is "lorem"; token i > 0 is " " + WORDS[i % len(WORDS)].
WORDS: tuple[str, ...] = tuple(_FILLER_TEXT.split(" "))
_SPACED: tuple[str, ...] = tuple(" " + w for w in WORDS)
# The same tokens already JSON-encoded (quoted, escaped) for the streaming hot path.
_FIRST_JSON: bytes = orjson.dumps(WORDS[0])
_SPACED_JSON: tuple[bytes, ...] = tuple(orjson.dumps(t) for t in _SPACED)


def content_chars(content: Any) -> int:
    """Characters of a message ``content``: a string or a list of parts with ``text``."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                total += len(part["text"])
        return total
    return 0


def message_tokens(message: Any) -> int:
    """Estimated tokens of one chat message: ``ceil(chars / 4) + 4``."""
    chars = content_chars(message.get("content")) if isinstance(message, dict) else 0
    return math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS


def estimate_prompt_tokens(messages: list[Any]) -> int:
    """Estimated prompt tokens of a message list (sum of ``message_tokens``)."""
    return sum(message_tokens(m) for m in messages)


def reply_token(index: int) -> str:
    """The ``index``-th token of the deterministic filler reply."""
    return WORDS[0] if index == 0 else _SPACED[index % len(_SPACED)]


def reply_token_json(index: int) -> bytes:
    """``reply_token(index)`` as JSON string bytes (pre-encoded, no per-call work)."""
    return _FIRST_JSON if index == 0 else _SPACED_JSON[index % len(_SPACED_JSON)]


def reply_text(n_tokens: int) -> str:
    """The whole filler reply of ``n_tokens`` tokens (what a stream concatenates to)."""
    return "".join(reply_token(i) for i in range(n_tokens))

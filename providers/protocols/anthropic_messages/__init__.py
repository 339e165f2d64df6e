"""Anthropic Messages (``POST /v1/messages``) <-> the neutral (OpenAI chat) form.

Four directions, one module each: ``inbound`` (a client's Messages request -> the
neutral body), ``render`` (neutral events -> Messages SSE or a Message), ``outbound``
(the neutral body -> an Anthropic upstream's request) and ``reader`` (that upstream's
stream -> OpenAI chunks). The names callers use are re-exported here.
"""

from .inbound import count_text, to_chat_body
from .outbound import ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS, from_chat_body, upstream_headers
from .reader import FINISH_REASONS, UpstreamReader
from .render import ERROR_TYPES, PING, STOP_REASONS, StreamRenderer, error_body, render_message, sse

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "ERROR_TYPES",
    "FINISH_REASONS",
    "PING",
    "STOP_REASONS",
    "StreamRenderer",
    "UpstreamReader",
    "count_text",
    "error_body",
    "from_chat_body",
    "render_message",
    "sse",
    "to_chat_body",
    "upstream_headers",
]

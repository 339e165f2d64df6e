"""OpenAI Responses (``POST /v1/responses``) -> the neutral (OpenAI chat) form and back.

Client side only (no upstream of the catalog speaks it): ``inbound`` turns a client's
Responses request into the neutral body (``history`` orders its items into chat
messages); ``render`` turns neutral events into Responses SSE events or one Response.
Errors are OpenAI's shape, as for chat. The names callers use are re-exported here.
"""

from .inbound import REFUSED, chat_tools, namespaces, to_chat_body
from .render import ResponseRenderer, render_response, skeleton, sse, usage_object

__all__ = [
    "REFUSED",
    "ResponseRenderer",
    "chat_tools",
    "namespaces",
    "render_response",
    "skeleton",
    "sse",
    "to_chat_body",
    "usage_object",
]

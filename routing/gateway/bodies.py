"""Keeping a call's request and reply when its organisation opted in
(``KeyPrincipal.log_bodies``; docs/dashboard.md, "Request and response bodies").

Nothing of it runs before the upstream call or delays the reply: ``ReplyTap`` stands
between the call and its ``Responder`` and keeps a reference to each reply write (at
most ``CAPTURE_MAX_BYTES``); when the call has ended, ``queue_bodies`` hands the request
and the captured bytes to a background writer, whose thread turns them into text (a
streamed reply is assembled into one completion), redacts, caps and stores them
(``billing.services.call_bodies_store``). A full queue drops the bodies, never the call.
"""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import orjson

from billing.bodies import BODY_MAX_CHARS, CallBodies
from billing.services import call_bodies_store
from common.aio import BatchWriter, db_call

from ..errors import GatewayError
from .accept import Accepted
from .assemble import CompletionAssembler
from .respond import Responder

logger = logging.getLogger(__name__)
# Raw reply bytes kept: SSE framing and per-chunk ids take several times the text.
CAPTURE_MAX_BYTES = 8 * BODY_MAX_CHARS
INDENT = orjson.OPT_INDENT_2


class ReplyTap:
    """The call's ``Responder``, keeping what is written to it (the OpenAI wire form:
    SSE events or one JSON body, whatever the client's API). Everything else is the
    wrapped responder's (``started``, ``ended``, ``model_switched``...)."""

    def __init__(self, out: Responder) -> None:
        self.out = out
        self.parts: list[bytes] = []
        self.size = 0
        self.truncated = False
        self.sse = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.out, name)

    def keep(self, body: bytes) -> None:
        if self.size + len(body) > CAPTURE_MAX_BYTES:
            self.truncated = True
            return
        self.parts.append(body)
        self.size += len(body)

    async def start_sse(self, request_id: str) -> None:
        self.sse = True
        await self.out.start_sse(request_id)

    async def write(self, body: bytes, *, end: bool = False) -> None:
        self.keep(body)
        await self.out.write(body, end=end)

    async def json(self, status: int, body: bytes, request_id: str | None = None) -> None:
        self.keep(body)
        await self.out.json(status, body, request_id)

    async def error(self, error: GatewayError, request_id: str | None = None) -> None:
        self.keep(error.body())
        await self.out.error(error, request_id)


def tap_for(accepted: Accepted, out: Responder) -> Responder:
    """``out``, behind a ``ReplyTap`` when the caller's organisation keeps bodies."""
    return cast(Responder, ReplyTap(out)) if accepted.principal.log_bodies else out


def queue_bodies(accepted: Accepted, out: Responder) -> None:
    """The call has ended: its bodies go to the background writer (if tapped)."""
    if isinstance(out, ReplyTap):
        body_writer.put((accepted, out))


def sse_reply_text(raw: bytes) -> str:
    """A streamed reply as one assembled completion (JSON), with the stream's error if
    it ended with one; the raw text if it holds no chat chunk."""
    assembler, error, chunks = CompletionAssembler(), None, 0
    for line in raw.split(b"\n"):
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        try:
            chunk = orjson.loads(line[6:])
        except orjson.JSONDecodeError:
            continue  # a chunk cut by the capture limit
        if isinstance(chunk, dict):
            error = chunk.get("error") or error
            assembler.add(chunk)
            chunks += 1
    if not chunks:
        return raw.decode("utf-8", "replace")
    completion = assembler.completion()
    if error is not None:
        completion["error"] = error
    return orjson.dumps(completion, option=INDENT).decode()


def request_text(body: dict[str, Any]) -> str:
    """The request indented (Python's encoder for what orjson refuses: integers beyond
    64 bits)."""
    try:
        return orjson.dumps(body, option=INDENT).decode()
    except orjson.JSONEncodeError:
        return json.dumps(body, indent=2, default=str)


def json_text(raw: bytes) -> str:
    """A JSON body indented; as it is (decoded) if it does not parse (cut, or not JSON)."""
    try:
        return orjson.dumps(orjson.loads(raw), option=INDENT).decode()
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


def prepared(accepted: Accepted, tap: ReplyTap) -> CallBodies:
    """The call's bodies as text (runs in the writer's thread)."""
    raw = b"".join(tap.parts)
    reply = sse_reply_text(raw) if tap.sse else json_text(raw)
    request = request_text(accepted.chat.body)
    return CallBodies(
        organisation_id=accepted.principal.organisation_id,
        request_id=accepted.request_id,
        request_text=request,
        response_text=reply,
        created_at=accepted.created_at,
        response_cut=tap.truncated,
    )


def _store(batch: list[tuple[Accepted, ReplyTap]]) -> None:

    bodies = []
    for accepted, tap in batch:
        try:
            bodies.append(prepared(accepted, tap))
        except Exception:  # one odd body must not cost the batch; never log its text
            logger.warning("bodies of %s could not be prepared", accepted.request_id)
    call_bodies_store(bodies=bodies)


_store_in_thread = db_call(_store)


async def _flush(batch: list[tuple[Accepted, ReplyTap]]) -> None:
    await _store_in_thread(batch)


body_writer: BatchWriter[tuple[Accepted, ReplyTap]] = BatchWriter(
    "call-bodies", _flush, max_items=10_000, batch_size=50, retry=False, linger_s=0.05
)

"""The chat endpoint as a lean ASGI application (Django stays for everything else).

Per request: admission (a bounded number of calls in flight per process, else a JSON
503 with Retry-After), the body read with its size limit enforced before and while
reading (413 from ``Content-Length`` before any byte is read, a chunked body cut at the
limit), authentication, acceptance (``accept``), then the gateway session (``call``).

A watcher awaits the ASGI ``http.disconnect`` message and cancels the call's task when
the client goes: the upstream connections close within milliseconds. Every response,
errors included, is JSON or SSE; an unexpected exception answers a JSON 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import orjson
from django.utils import timezone

from billing.auth import KeyPrincipal
from billing.ledger_writer import ledger_writer, queue_rejected
from common import events, metrics
from common.logs import bind_generation_id, unbind_generation_id

from ..config import live_config
from ..errors import GatewayError
from .accept import Accepted, accept, require_key
from .bodies import queue_bodies, tap_for
from .call import LiveCall
from .finish import start
from .respond import Responder

logger = logging.getLogger(__name__)


class Admission:
    """Calls in flight in this process, bounded by ``MAX_INFLIGHT_CALLS``, and admitted
    only while the ledger's backlog is under ``LEDGER_BACKLOG_MAX`` items (every call
    adds to it: a database slower than the traffic must not grow it without bound)."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.refused = 0

    def try_enter(self) -> bool:
        conf = live_config()
        if (
            self.in_flight >= conf.max_inflight_calls
            or ledger_writer.pending() >= conf.ledger_backlog_max
        ):
            self.refused += 1
            return False
        self.in_flight += 1
        return True

    def leave(self) -> None:
        self.in_flight -= 1


admission = Admission()


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _too_large(limit: int) -> GatewayError:
    return GatewayError(413, f"Request body is larger than {limit} bytes.", code="too_large")


async def read_body(scope: dict[str, Any], receive) -> bytes:
    """The whole body, or GatewayError 413 as soon as it is known to exceed the limit."""
    limit = live_config().max_body_bytes
    declared = _header(scope, b"content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        if not declared.isdigit():
            raise GatewayError(400, "Invalid Content-Length header.")
        raise _too_large(limit)
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise asyncio.CancelledError
        body = message.get("body", b"")
        size += len(body)
        if size > limit:
            raise _too_large(limit)
        parts.append(body)
        if not message.get("more_body", False):
            return b"".join(parts)


def _content_type_ok(scope: dict[str, Any]) -> bool:
    content_type = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
    return content_type in ("", "application/json") or content_type.endswith("+json")


async def _watch_disconnect(
    receive, task: asyncio.Task, out: Responder, on_disconnect: list[Callable[[], None]]
) -> None:
    """Cancel ``task`` when the client disconnects before the response ended, after the
    ``on_disconnect`` callbacks (closing the upstream at once)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not out.ended:  # after the last byte, a closed connection is no news
                for callback in on_disconnect:
                    callback()
                task.cancel()
            return


def _record_rejection(principal: KeyPrincipal, error: GatewayError, body: bytes) -> None:
    """Refused requests of an identified key appear on its Activity ("rejected")."""
    try:
        model = orjson.loads(body).get("model") if body else ""
    except (orjson.JSONDecodeError, AttributeError):
        model = ""
    queue_rejected(
        organisation_id=principal.organisation_id,
        api_key_id=principal.api_key_id,
        status=error.status,
        code=str(error.code or ""),
        message=error.message,
        model_slug=model if isinstance(model, str) else "",
        param=str(error.param or ""),
        created_at=timezone.now(),
    )


class GatewayApp:
    """What every lean gateway endpoint shares: POST only, admission, the body with its
    limit, the content type, the key, then acceptance (``accept``, per endpoint) and the
    call. A 4xx answered to an identified key is recorded; any unexpected exception is
    answered as a JSON 500. Subclasses set the responder (the wire format of replies and
    errors) and how a body is accepted."""

    responder: type[Responder] = Responder
    listening = False

    def overloaded(self) -> GatewayError:
        return GatewayError(
            503, "The gateway is at capacity; retry shortly.", code="overloaded", retry_after_s=1
        )

    def authorization(self, scope: dict[str, Any]) -> str | None:
        return _header(scope, b"authorization")

    async def accept(
        self, scope: dict[str, Any], principal: KeyPrincipal, body: bytes, out: Responder
    ) -> Accepted | None:
        """The accepted call, or None when the request was answered already."""
        return await accept(principal, body)

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        if not GatewayApp.listening:  # change propagation (common.events), once per process
            GatewayApp.listening = True
            events.start_listener()
        out = self.responder(send)
        if scope["method"] != "POST":
            await out.error(GatewayError(405, "Use POST.", allow="POST"))
            return
        if not admission.try_enter():
            metrics.set_inflight(admission.in_flight)
            await out.error(self.overloaded())
            return
        try:
            await self._handle(scope, receive, out)
        except asyncio.CancelledError:
            pass  # the client went away; the call (if any) finished its row
        except Exception:
            logger.exception("%s request failed", type(self).__name__)
            if not out.started:
                await out.error(GatewayError(500, "Internal gateway error.", code="internal"))
        finally:
            admission.leave()

    async def _handle(self, scope: dict[str, Any], receive, out: Responder) -> None:
        principal: KeyPrincipal | None = None
        body = b""
        try:
            body = await read_body(scope, receive)
        except GatewayError as exc:
            await out.error(exc)
            return
        # From here the client's disconnect cancels the request, also while it waits for
        # its key or its admission (a burst of new keys queues their reads): a request
        # its client has left never reaches a provider. Both waits are cancellation-safe
        # (a shielded key read fills the cache anyway; an admission is released).
        task = asyncio.current_task()
        assert task is not None
        on_disconnect: list[Callable[[], None]] = []
        watcher = asyncio.ensure_future(_watch_disconnect(receive, task, out, on_disconnect))
        try:
            try:
                if not _content_type_ok(scope):
                    raise GatewayError(415, "Content-Type must be application/json.")
                principal = await require_key(self.authorization(scope))
                accepted = await self.accept(scope, principal, body, out)
            except GatewayError as exc:
                await out.error(exc)
                if principal is not None and 400 <= exc.status < 500:
                    _record_rejection(principal, exc, body)
                return
            if accepted is not None:
                await serve(accepted, out, on_disconnect)
        finally:
            watcher.cancel()


async def serve(
    accepted: Accepted, out: Responder, on_disconnect: list[Callable[[], None]]
) -> None:
    """Run an accepted call to its end: its row opened and its log lines tagged with the
    generation id (the client's disconnect cancels it: ``GatewayApp._handle``, after
    closing its upstream connections through ``on_disconnect``)."""
    start(accepted)
    log_context = bind_generation_id(accepted.request_id)
    metrics.set_inflight(admission.in_flight)
    reply = tap_for(accepted, out)  # kept for the organisation if it opted in
    call = LiveCall(accepted, reply)
    on_disconnect.append(call.abort_upstreams)
    try:
        await call.run()
    finally:
        queue_bodies(accepted, reply)
        unbind_generation_id(log_context)


class ChatApp(GatewayApp):
    """ASGI app for ``POST /api/v1/chat/completions``."""


chat_app = ChatApp()

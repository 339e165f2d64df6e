"""The raw ASGI application: routing, admin endpoints and the log filter.

Routes:
  POST /{provider}/v1/chat/completions   OpenAI chat completions (stream and not)
  POST /{provider}/v1/messages           Anthropic Messages (stream and not; messages.py)
  GET  /{provider}/v1/models             the provider's models
  GET  /_health                          {"ok": true}
  GET  /_log[?provider=slug]             log records, oldest first
  POST /_reset                           clear log, caches, RNGs ({"profiles": true}: overrides too)
  GET  /_control/{provider}              the live profile
  POST /_control/{provider}              merge overrides ({"reset": true} restores the file's)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import orjson

from .admission import Reject, check_auth
from .chat import handle_chat
from .generate import StreamAbort
from .messages import handle_messages
from .profiles import EmulatorConfig, ProfileError, load_config
from .responses import Receive, Send, send_error, send_json
from .state import EmulatorState, ProviderState

MAX_BODY_BYTES = 256 * 1024 * 1024


class _DropStreamAbort(logging.Filter):
    """Keep uvicorn from logging a traceback for deliberate connection aborts."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, StreamAbort)


def _install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DropStreamAbort) for f in logger.filters):
        logger.addFilter(_DropStreamAbort())


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None if the client went away first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY_BYTES or not message.get("more_body", False):
            return b"".join(chunks)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class EmulatorApp:
    """ASGI app serving every provider of one profile config."""

    def __init__(self, config: EmulatorConfig) -> None:
        self.state = EmulatorState(config)
        _install_log_filter()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """ASGI entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method, parts = scope["method"], scope["path"].strip("/").split("/")
        body = b""
        if method == "POST":
            read = await _read_body(receive)
            if read is None:
                return
            body = read
        if parts[0].startswith("_"):
            await self._admin(method, parts, scope, body, send)
        elif len(parts) == 4 and parts[1:] == ["v1", "chat", "completions"]:
            await self._chat(method, parts[0], scope, body, receive, send)
        elif len(parts) == 3 and parts[1:] == ["v1", "messages"]:
            await self._chat(method, parts[0], scope, body, receive, send, handle_messages)
        elif len(parts) == 3 and parts[1:] == ["v1", "models"]:
            await self._models(method, parts[0], scope, send)
        else:
            await send_error(send, 404, f"No route for {method} {scope['path']}.")

    def _provider_or_none(self, slug: str) -> ProviderState | None:
        return self.state.providers.get(slug)

    async def _chat(
        self,
        method: str,
        slug: str,
        scope: dict[str, Any],
        body: bytes,
        receive: Receive,
        send: Send,
        handler=handle_chat,
    ) -> None:
        provider = self._provider_or_none(slug)
        if provider is None:
            await send_error(send, 404, f"Unknown provider '{slug}'.", code="provider_not_found")
        elif method != "POST":
            await send_error(send, 405, "Use POST for chat completions.")
        else:
            await handler(self.state, provider, scope, body, receive, send)

    async def _models(self, method: str, slug: str, scope: dict[str, Any], send: Send) -> None:
        provider = self._provider_or_none(slug)
        if provider is None:
            await send_error(send, 404, f"Unknown provider '{slug}'.", code="provider_not_found")
            return
        try:
            check_auth(provider, scope["headers"])
        except Reject as reject:
            await send_error(send, reject.status, reject.message, code=reject.code)
            return
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": slug}
            for m in provider.profile["models"]
        ]
        await send_json(send, 200, {"object": "list", "data": data})

    async def _admin(
        self, method: str, parts: list[str], scope: dict[str, Any], body: bytes, send: Send
    ) -> None:
        route = (method, parts[0], len(parts))
        if route == ("GET", "_health", 1):
            await send_json(send, 200, {"ok": True})
        elif route == ("GET", "_log", 1):
            query = parse_qs(scope.get("query_string", b"").decode())
            provider = query.get("provider", [None])[0]
            await send_json(send, 200, self.state.records(provider))
        elif route == ("POST", "_reset", 1):
            options = _json_object(body) or {}
            self.state.reset(profiles=bool(options.get("profiles")))
            await send_json(send, 200, {"ok": True})
        elif parts[0] == "_control" and len(parts) == 2 and method in ("GET", "POST"):
            await self._control(method, parts[1], body, send)
        else:
            await send_error(send, 404, f"No route for {method} {scope['path']}.")

    async def _control(self, method: str, slug: str, body: bytes, send: Send) -> None:
        provider = self._provider_or_none(slug)
        if provider is None:
            await send_error(send, 404, f"Unknown provider '{slug}'.", code="provider_not_found")
            return
        if method == "GET":
            await send_json(send, 200, provider.profile)
            return
        overrides = _json_object(body)
        if overrides is None:
            await send_error(send, 400, "Body must be a JSON object of profile fields.")
            return
        try:
            await send_json(send, 200, self.state.control(slug, overrides))
        except ProfileError as exc:
            await send_error(send, 400, str(exc))


def _json_object(body: bytes) -> dict[str, Any] | None:
    """``body`` as a JSON object; ``{}`` when empty; None when not an object."""
    if not body.strip():
        return {}
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def create_app(
    profiles: Mapping[str, Any] | str | Path,
    *,
    seed: int | None = None,
    time_scale: float | None = None,
) -> EmulatorApp:
    """Build the ASGI app from a profile dict or file path (see ``profiles``)."""
    return EmulatorApp(load_config(profiles, seed=seed, time_scale=time_scale))

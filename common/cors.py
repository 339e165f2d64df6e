"""CORS for the API (``/api/`` and ``/v1/`` paths; never the dashboard), as ASGI middleware
in front of every HTTP app (``uberllm/asgi.py``).

A request from a browser page carries ``Origin``. When that origin is allowed
(``UBERLLM["CORS_ALLOWED_ORIGINS"]``, default ``["*"]``: API keys are bearer tokens, never
cookies, so any page may call the API with its own key; credentials are never allowed):

- a preflight (``OPTIONS``) is answered here, 204 with ``Access-Control-Allow-Origin``,
  ``-Methods``, ``-Headers`` (the headers the browser asks for: the SDKs send their own)
  and ``-Max-Age``, whatever the path (an unknown one then answers its JSON 404);
- every other answer (JSON, SSE streams, errors) gets ``Access-Control-Allow-Origin`` and
  ``Access-Control-Expose-Headers`` (the generation id, ``Retry-After``) on its first
  message.

A request without ``Origin`` (every SDK, curl) costs one scan of its headers and nothing
else: its ``send`` is not wrapped, so a stream's chunks pass untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .config import settings_config

API_PREFIXES = ("/api/", "/v1/")
METHODS = b"GET, POST, OPTIONS"
DEFAULT_HEADERS = b"authorization, content-type, x-api-key, anthropic-version, anthropic-beta"
EXPOSED = b"x-generation-id, retry-after"

Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[dict[str, Any], Any, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class CorsConfig:
    any_origin: bool
    origins: frozenset[bytes]
    max_age: bytes

    @classmethod
    def from_settings(cls, conf: Mapping[str, Any]) -> CorsConfig:
        origins = [o.strip().rstrip("/") for o in conf.get("CORS_ALLOWED_ORIGINS", ["*"])]
        return cls(
            any_origin="*" in origins,
            origins=frozenset(o.encode("latin-1") for o in origins if o and o != "*"),
            max_age=str(int(conf.get("CORS_MAX_AGE_S", 7200))).encode(),
        )

    def allowed(self, origin: bytes) -> bytes | None:
        """The ``Access-Control-Allow-Origin`` value for ``origin``, or None."""
        if self.any_origin:
            return b"*"
        return origin if origin in self.origins else None

    def vary(self) -> list[tuple[bytes, bytes]]:
        """``Vary: Origin`` when the answer depends on the origin (a list, not ``*``)."""
        return [] if self.any_origin else [(b"vary", b"Origin")]


cors_config = settings_config(CorsConfig.from_settings)


def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


async def _preflight(send: Send, allowed: bytes, asked: bytes | None, conf: CorsConfig) -> None:
    headers = [
        (b"access-control-allow-origin", allowed),
        (b"access-control-allow-methods", METHODS),
        (b"access-control-allow-headers", asked or DEFAULT_HEADERS),
        (b"access-control-max-age", conf.max_age),
        (b"content-length", b"0"),
        *conf.vary(),
    ]
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _with_cors(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    async def send_with_cors(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *extra]}
        await send(message)

    return send_with_cors


class ApiCors:
    """ASGI middleware: CORS on the API's paths, the wrapped app unchanged elsewhere."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(API_PREFIXES):
            await self.app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        if origin is None:  # not from a browser: the app as it is
            await self.app(scope, receive, send)
            return
        conf = cors_config()
        allowed = conf.allowed(origin)
        if allowed is None:
            await self.app(scope, receive, send)
        elif scope["method"] == "OPTIONS":
            asked = _header(scope, b"access-control-request-headers")
            await _preflight(send, allowed, asked, conf)
        else:
            await self.app(scope, receive, _with_cors(send, _answer_headers(allowed, conf)))


def _answer_headers(allowed: bytes, conf: CorsConfig) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", allowed),
        (b"access-control-expose-headers", EXPOSED),
        *conf.vary(),
    ]

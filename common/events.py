"""Change propagation: push "this changed" to every gateway process within a second.

Each process keeps short-lived caches in front of the database (API keys, key spend,
the catalog: 5 s TTLs). ``publish(topic, payload)`` runs this process's handlers at once
and, when ``REDIS_URL`` is set, publishes the event on a Redis pub/sub channel; a
listener thread in every other process (``start_listener``) runs the same handlers on
receipt. Handlers only drop cache entries, so a duplicated or reordered event is
harmless, and a lost one (Redis down, listener reconnecting) costs at most the TTL: the
periodic refresh stays the fallback.

The channel is ``<SHARED_KEY_PREFIX>:events``, read at each publish and receipt, so
deployments (and test runs) sharing one Redis never act on each other's events.

Publish after the change is committed (``publish_on_commit``): a process that reloads
on the event must see the new row.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction

from .config import process_config

logger = logging.getLogger(__name__)

API_KEY_CHANGED = "api_key.changed"  # payload: prefix, api_key_id (revoked, limit changed)
CATALOG_CHANGED = "catalog.changed"  # payload: model, reason (provider/model/endpoint edit)
CHANNEL_PATTERN = "*:events"
RECONNECT_DELAY_S = 0.5

Handler = Callable[[dict[str, Any]], None]
_handlers: dict[str, list[Handler]] = {}
_origin = uuid.uuid4().hex  # this process: its own events come back and are skipped
_publisher = None
_publisher_lock = threading.Lock()
_listener: threading.Thread | None = None
_listener_lock = threading.Lock()
_listening = threading.Event()  # set while subscribed (tests wait on it)


def channel() -> str:
    return f"{process_config().shared_key_prefix}:events"


def register(topic: str, handler: Handler) -> None:
    """Call ``handler(payload)`` on every ``topic`` event, local or remote."""
    if handler not in _handlers.setdefault(topic, []):
        _handlers[topic].append(handler)


def dispatch(topic: str, payload: dict[str, Any]) -> None:
    """Run this process's handlers of ``topic``; one failing does not stop the others."""
    for handler in _handlers.get(topic, ()):
        try:
            handler(payload)
        except Exception:
            logger.exception("event handler %s failed on %s", handler.__name__, topic)


def _redis():
    """One publishing client per process (a connection pool; thread-safe)."""
    global _publisher
    with _publisher_lock:
        if _publisher is None or _publisher[0] != settings.REDIS_URL:
            import redis

            client = redis.Redis.from_url(
                settings.REDIS_URL, socket_timeout=1.0, socket_connect_timeout=1.0
            )
            _publisher = (settings.REDIS_URL, client)
        return _publisher[1]


def publish(topic: str, payload: dict[str, Any] | None = None) -> None:
    """Apply the change in this process now and tell every other process. Never raises:
    with Redis unreachable, the others catch up within their cache TTLs."""
    payload = payload or {}
    dispatch(topic, payload)
    if not settings.REDIS_URL:
        return  # one process (embedded default): nobody else to tell
    message = orjson.dumps({"topic": topic, "payload": payload, "origin": _origin})
    try:
        _redis().publish(channel(), message)
    except Exception as exc:
        logger.warning(
            "event %s not published (%s); other processes catch up within their cache TTLs",
            topic,
            exc,
        )


def publish_on_commit(topic: str, payload: dict[str, Any] | None = None) -> None:
    """Run this process's handlers now, and ``publish`` once the current transaction
    commits (at once outside one): the others then reload the committed row."""
    dispatch(topic, payload or {})
    transaction.on_commit(lambda: publish(topic, payload))


def _handle_message(message: dict) -> None:
    if message.get("type") != "pmessage" or message["channel"].decode() != channel():
        return
    event = orjson.loads(message["data"])
    if event.get("origin") != _origin:
        dispatch(event["topic"], event.get("payload") or {})


def _listen(url: str) -> None:
    """Until REDIS_URL changes (tests): subscribe, handle, reconnect after a loss."""
    import redis

    while url == settings.REDIS_URL:
        client = redis.Redis.from_url(url, socket_connect_timeout=2.0, health_check_interval=10)
        try:
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            pubsub.psubscribe(CHANNEL_PATTERN)
            _listening.set()
            while url == settings.REDIS_URL:
                message = pubsub.get_message(timeout=1.0)
                if message is not None:
                    _handle_message(message)
        except Exception as exc:
            _listening.clear()
            logger.warning("event listener lost Redis (%s); reconnecting", exc)
            time.sleep(RECONNECT_DELAY_S)
        finally:
            _listening.clear()
            client.close()


def start_listener() -> bool:
    """Start this process's listener thread (idempotent, cheap to call again). Call it
    at the ASGI app's startup; without Redis there is nothing to listen to. Returns
    whether a listener runs."""
    global _listener
    if not settings.REDIS_URL:
        return False
    if _listener is not None and _listener.is_alive():
        return True
    with _listener_lock:
        if _listener is None or not _listener.is_alive():
            _listener = threading.Thread(
                target=_listen, args=(settings.REDIS_URL,), name="uberllm-events", daemon=True
            )
            _listener.start()
    return True


def wait_listening(timeout: float) -> bool:
    return _listening.wait(timeout)


# --- Wiring ----------------------------------------------------------------------------
# The apps register their handlers (billing: API keys, routing: the catalog) and publish
# their own changes from their AppConfig.ready; this module knows none of them.


def _on_request_started(**_kwargs: Any) -> None:
    start_listener()


def connect_listener_start() -> None:
    """The first request of a process starts its listener (a fallback for an ASGI app
    that does not call ``start_listener`` at startup). From an AppConfig.ready."""
    from django.core.signals import request_started

    request_started.connect(_on_request_started, dispatch_uid="common.events.listener")

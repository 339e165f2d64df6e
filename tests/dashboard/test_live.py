"""The Activity WebSocket against the live gateway (uvicorn, real ASGI app): session-
authenticated, same-origin, scoped to the member's organisation, fed by the ledger
through the channel layer when a real call finishes (billing.live)."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import Client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from ..support import TEST_MODEL, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def _socket(gateway, cookie: str | None = None, origin: str | None = None):
    headers = {"Origin": origin or gateway.base_url}
    if cookie:
        headers["Cookie"] = cookie
    url = gateway.base_url.replace("http://", "ws://") + "/ws/activity/"
    return connect(url, additional_headers=headers, open_timeout=5)


def test_anonymous_and_foreign_origin_sockets_are_refused(gateway, tenant):
    with pytest.raises(InvalidStatus):
        _socket(gateway)
    with pytest.raises(InvalidStatus):
        _socket(gateway, _cookie(tenant.user), origin="http://evil.example")


def test_a_finished_call_reaches_its_organisations_dashboards_only(gateway, client, tenant):
    other = make_tenant("Elsewhere")
    with (
        _socket(gateway, _cookie(tenant.user)) as own,
        _socket(gateway, _cookie(other.user)) as foreign,
    ):
        reply = client.chat.completions.create(
            model=TEST_MODEL, messages=[{"role": "user", "content": "live?"}]
        )
        events = [json.loads(own.recv(timeout=10))]
        if events[0]["status"] == "pending":  # the call in progress, then its end
            events.append(json.loads(own.recv(timeout=10)))
        event = events[-1]
        assert all(e["event"] == "activity" and e["request_id"] == reply.id for e in events)
        assert event["status"] == "success" and event["model"] == TEST_MODEL
        with pytest.raises(TimeoutError):
            foreign.recv(timeout=0.5)

"""Opt-in request/response body logging per organisation (docs/dashboard.md, "Request
and response bodies"): off by default, switched by owners, kept after the call by the
gateway's background writer (redacted, capped), shown on the call's page to the
organisation's members only, deleted after the organisation's retention days."""

from __future__ import annotations

from datetime import timedelta

import httpx
import orjson
from django.utils import timezone

from billing import selectors
from billing.bodies import BODY_MAX_CHARS, CallBodies
from billing.models import CallBody
from billing.services import call_bodies_store, member_add, organisation_set_body_logging
from billing.tasks import call_bodies_purge_task

from ..support import TEST_MODEL, make_tenant, wait_background_idle, wait_finished_rows
from .helpers import finished_call, install_test_catalog, login

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"


def _chat(gateway, tenant, content: str, *, stream: bool = False) -> str:
    """One call through the live gateway; returns its request id."""
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": content}]}
    if stream:
        body["stream"] = True
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {tenant.key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    request_id = response.headers["x-generation-id"]
    wait_finished_rows(1)
    wait_background_idle()
    return request_id


def _switch_on(tenant, days: int = 7) -> None:
    page = login(tenant.user).post(
        "/keys/body-logging/", {"log_bodies": "on", "retention_days": str(days)}
    )
    assert page.status_code == 302
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.log_bodies and tenant.organisation.body_retention_days == days


def test_off_by_default_nothing_is_kept(gateway, tenant):
    assert tenant.organisation.log_bodies is False
    request_id = _chat(gateway, tenant, "hello, keep nothing")
    assert CallBody.unscoped_objects.count() == 0
    page = login(tenant.user).get(f"/activity/{request_id}/").content.decode()
    assert 'id="no-bodies"' in page and "Body logging is off" in page
    assert "hello, keep nothing" not in page


def test_on_the_bodies_are_kept_redacted_and_shown(gateway, tenant):
    _switch_on(tenant)
    request_id = _chat(gateway, tenant, f"my key is {SECRET}, please ignore it")
    kept = selectors.call_body_get(organisation_id=tenant.organisation.id, request_id=request_id)
    assert kept is not None
    assert "please ignore it" in kept.request_body and SECRET not in kept.request_body
    assert "[redacted]" in kept.request_body
    assert '"chat.completion"' in kept.response_body and '"content"' in kept.response_body
    page = login(tenant.user).get(f"/activity/{request_id}/").content.decode()
    assert 'id="request-body"' in page and "please ignore it" in page
    assert 'id="response-body"' in page and SECRET not in page


def test_a_streamed_reply_is_kept_as_one_completion(gateway, tenant):
    _switch_on(tenant)
    request_id = _chat(gateway, tenant, "stream me", stream=True)
    kept = CallBody.objects.for_organisation(tenant.organisation).get(request_id=request_id)
    assert '"chat.completion"' in kept.response_body and "data: " not in kept.response_body
    assert '"finish_reason"' in kept.response_body
    assert kept.response_truncated is False


def test_another_organisation_cannot_see_the_bodies(gateway, tenant):
    _switch_on(tenant)
    request_id = _chat(gateway, tenant, "for Acme's eyes only")
    other = make_tenant("Other")
    organisation_set_body_logging(
        organisation=other.organisation, log_bodies=True, retention_days=7
    )
    assert (
        selectors.call_body_get(organisation_id=other.organisation.id, request_id=request_id)
        is None
    )
    page = login(other.user).get(f"/activity/{request_id}/")
    assert page.status_code == 404 and b"for Acme's eyes only" not in page.content


def test_only_owners_switch_it(db):
    tenant = make_tenant("Owners")
    member = member_add(organisation=tenant.organisation, username="just-a-member")
    page = login(member).post("/keys/body-logging/", {"log_bodies": "on", "retention_days": "7"})
    assert page.status_code == 403
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.log_bodies is False
    refused = login(tenant.user).post(
        "/keys/body-logging/", {"log_bodies": "on", "retention_days": "365"}
    )
    assert refused.status_code == 400
    tenant.organisation.refresh_from_db()
    assert tenant.organisation.log_bodies is False


def test_the_admin_neither_lists_bodies_nor_switches_logging(db):
    from django.contrib import admin

    from billing.models import Organisation

    assert CallBody not in admin.site._registry
    organisation_admin = admin.site._registry[Organisation]
    assert {"log_bodies", "body_retention_days"} <= set(organisation_admin.readonly_fields)


def test_a_kept_body_is_escaped_on_the_page(db):
    tenant = make_tenant("Escape")
    organisation_set_body_logging(
        organisation=tenant.organisation, log_bodies=True, retention_days=7
    )
    call = finished_call(
        tenant, "gen-html", endpoint=install_test_catalog()["alpha"], prompt=10, completion=5
    )
    _kept(tenant, "gen-html", age=timedelta(0), text='{"content": "<script>alert(1)</script>"}')
    page = login(tenant.user).get(f"/activity/{call.request_id}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page


def _kept(tenant, request_id: str, *, age: timedelta, text: str = "{}") -> None:
    call_bodies_store(
        bodies=[
            CallBodies(
                organisation_id=tenant.organisation.id,
                request_id=request_id,
                request_text=text,
                response_text="{}",
                created_at=timezone.now() - age,
            )
        ]
    )


def test_a_body_is_capped(db):
    tenant = make_tenant("Caps")
    _kept(tenant, "gen-big", age=timedelta(0), text="x" * (BODY_MAX_CHARS * 2))
    kept = CallBody.objects.for_organisation(tenant.organisation).get(request_id="gen-big")
    assert kept.request_truncated and len(kept.request_body) == BODY_MAX_CHARS
    assert kept.request_body.endswith("[truncated]") and not kept.response_truncated


def test_retention_purge_keeps_each_organisations_own_days(db):
    short, long = make_tenant("Short"), make_tenant("Long")
    organisation_set_body_logging(
        organisation=short.organisation, log_bodies=True, retention_days=1
    )
    organisation_set_body_logging(
        organisation=long.organisation, log_bodies=True, retention_days=30
    )
    _kept(short, "gen-short-old", age=timedelta(days=2))
    _kept(short, "gen-short-new", age=timedelta(hours=1))
    _kept(long, "gen-long-old", age=timedelta(days=2))
    _kept(long, "gen-long-expired", age=timedelta(days=31))
    assert call_bodies_purge_task() == 2
    left = set(CallBody.unscoped_objects.values_list("request_id", flat=True))
    assert left == {"gen-short-new", "gen-long-old"}


def test_switching_on_reaches_the_gateway_key_cache(transactional_db):
    """The setting travels with the key: saving it drops the organisation's keys from
    the caches, and the key's principal then says so."""
    from asgiref.sync import async_to_sync

    from billing import auth

    tenant = make_tenant("Cache")
    principal = async_to_sync(auth.authenticate)(f"Bearer {tenant.key}")
    assert principal is not None and principal.log_bodies is False
    organisation_set_body_logging(
        organisation=tenant.organisation, log_bodies=True, retention_days=3
    )
    auth.forget_cached_key(tenant.api_key.prefix)
    principal = async_to_sync(auth.authenticate)(f"Bearer {tenant.key}")
    assert principal is not None and principal.log_bodies is True


def test_a_messages_api_call_is_kept_and_still_answered_in_anthropics_shape(gateway, tenant):
    """The tap sits between the call and the Messages responder: the client still gets
    Anthropic events; the reply kept is the call's (OpenAI form) completion."""
    import anthropic

    _switch_on(tenant)
    with anthropic.Anthropic(
        base_url=f"{gateway.base_url}/api", api_key=tenant.key, max_retries=0
    ) as claude:
        prompt = [{"role": "user", "content": "Say hello from Messages."}]
        with claude.messages.stream(model=TEST_MODEL, max_tokens=50, messages=prompt) as stream:
            text = "".join(stream.text_stream)
    assert text
    wait_finished_rows(1)
    wait_background_idle()
    kept = CallBody.objects.for_organisation(tenant.organisation).get()
    assert "Say hello from Messages." in kept.request_body
    assert '"chat.completion"' in kept.response_body and text[:20] in kept.response_body


def _sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_a_streamed_reply_is_assembled_and_an_odd_one_kept_as_it_is():
    from routing.gateway.bodies import json_text, request_text, sse_reply_text

    hello = {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
    rest = {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]}
    assembled = orjson.loads(sse_reply_text(b": PROCESSING\n\n" + _sse(hello, rest)))
    assert assembled["choices"][0]["message"]["content"] == "Hello"
    cut = {"error": {"message": "upstream cut"}, "choices": []}
    assert orjson.loads(sse_reply_text(_sse(hello, cut)))["error"]["message"] == "upstream cut"
    assert sse_reply_text(b"not sse at all") == "not sse at all"
    assert json_text(b'{"cut": "in the mid') == '{"cut": "in the mid'
    assert "1180591620717411303424" in request_text({"seed": 2**70})  # beyond orjson's ints

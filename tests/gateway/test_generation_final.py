"""``GET /generation`` right after a reply (issue 42, "Money"): the ledger writes its
rows in batches, so for up to ``LEDGER_FLUSH_INTERVAL_S`` the database holds no row or a
pending one with $0. The serving process answers from its own figures of the calls it
has just finished; a record that is not final anywhere is a 404 ``generation_pending``
with ``Retry-After`` (as OpenRouter answers until its record exists), never a pending
record with $0 that reads as final."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import openai
import pytest

from billing.ledger import activity_open
from billing.ledger_writer import ledger_writer
from billing.models import Activity

from ..support import TEST_MODEL

pytestmark = pytest.mark.django_db(transaction=True)
SLOW_BATCHES_S = 3.0  # the writer's interval here: every read below is before the batch


@pytest.fixture
def held_ledger(monkeypatch):
    """The ledger writer's batches wait until the test sets the event it yields: the
    database stays as it was when the reply ended, however slow the machine is."""
    release = threading.Event()
    flush = ledger_writer._flush

    async def held_flush(batch):
        await asyncio.to_thread(release.wait)
        await flush(batch)

    monkeypatch.setattr(ledger_writer, "_flush", held_flush)
    yield release
    release.set()


def _generation(gateway, tenant, request_id: str) -> httpx.Response:
    return httpx.get(
        f"{gateway.api_url}/generation",
        params={"id": request_id},
        headers={"Authorization": f"Bearer {tenant.key}"},
    )


def test_a_record_read_right_after_a_non_streamed_reply_is_final(
    gateway, tenant, client, emulator, held_ledger
):
    # A reply slower than the deferral of a non-streamed call's opening (1 s): its row
    # is queued pending before the reply ends, as in the reported 3 of 20; the writer
    # holds its batches until the reads below are done.
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, ttft_base_s=1.2)
    reply = client.chat.completions.with_raw_response.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    request_id = reply.headers["x-generation-id"]
    usage = reply.parse().usage
    answer = _generation(gateway, tenant, request_id)
    row = Activity.unscoped_objects.filter(request_id=request_id).first()
    assert row is None or row.status == "pending"  # the database is not final yet
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["status"] == "success" and data["id"] == request_id
    assert Decimal(data["total_cost"]) > 0
    assert data["tokens_prompt"] == usage.prompt_tokens
    assert data["tokens_completion"] == usage.completion_tokens
    assert data["attempts"][0]["outcome"] == "success"
    assert data["list_price_cost"] is not None  # savings as the row will have them


def test_another_tenants_just_finished_call_stays_unknown(gateway, tenant, client, monkeypatch):
    from ..support import make_tenant

    monkeypatch.setattr(ledger_writer, "min_interval_s", SLOW_BATCHES_S)
    reply = client.chat.completions.with_raw_response.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    other = make_tenant("Other")
    answer = _generation(gateway, other, reply.headers["x-generation-id"])
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] != "generation_pending"


def test_a_pending_record_is_a_404_the_clients_understand(gateway, tenant, client):
    # A call in flight, or finished by another process whose batch is not written yet.
    activity_open(
        request_id="gen-elsewhere",
        organisation_id=tenant.organisation.id,
        api_key_id=tenant.api_key.id,
        model_slug=TEST_MODEL,
        stream=False,
        created_at=datetime.now(UTC),
    )
    answer = _generation(gateway, tenant, "gen-elsewhere")
    assert answer.status_code == 404 and answer.headers["retry-after"] == "1"
    error = answer.json()["error"]
    assert error["code"] == "generation_pending" and "not final yet" in error["message"]
    with pytest.raises(openai.NotFoundError, match="not final yet"):
        client.get("/generation", cast_to=object, options={"params": {"id": "gen-elsewhere"}})

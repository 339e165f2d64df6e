"""The ledger cannot lose or double a charge, and never bills above the customer's cap."""

import asyncio
import logging
import random
from datetime import timedelta
from decimal import Decimal

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from billing.ledger import (
    AttemptResult,
    CallResult,
    Checkpoint,
    OpenRow,
    activity_finish,
    activity_open,
)
from billing.models import Activity, Attempt
from billing.money import decimal_str
from billing.services import api_key_create
from billing.tasks import activity_reconcile_task

from ..support import TEST_MODEL, make_tenant, wait_finished_rows

PER_MILLION = Decimal(1_000_000)


def _result(request_id: str) -> CallResult:
    return CallResult(
        request_id=request_id,
        status="success",
        http_status=200,
        provider_slug="alpha",
        prompt_tokens=100,
        cached_tokens=10,
        completion_tokens=5,
        cost_usd=Decimal("0.00123"),
        attempts=[
            AttemptResult(1, None, "bravo", "r", "http_error", 500),
            AttemptResult(2, None, "alpha", "r", "success"),
        ],
    )


def _open(tenant, request_id: str, created_at) -> None:
    """``activity_open`` of a streamed call of ``tenant``'s key to model ``m``."""
    activity_open(
        request_id=request_id,
        organisation_id=tenant.organisation.id,
        api_key_id=tenant.api_key.id,
        model_slug="m",
        stream=True,
        created_at=created_at,
    )


def _open_rows(tenant, prefix: str, count: int, at) -> list[OpenRow]:
    """The openings of ``count`` streamed TEST_MODEL calls of ``tenant``'s key at ``at``,
    request ids ``{prefix}0`` onwards."""
    return [
        OpenRow(f"{prefix}{n}", tenant.organisation.id, tenant.api_key.id, TEST_MODEL, True, at)
        for n in range(count)
    ]


def _alpha_beat(row: OpenRow, at, market, **numbers) -> Checkpoint:
    """A checkpoint of ``row``'s stream served by alpha, with what it had delivered."""
    return Checkpoint(
        row.request_id, at, endpoint_id=market["alpha"].id, provider_slug="alpha", **numbers
    )


@pytest.mark.django_db
def test_finaliser_replayed_three_times_changes_nothing(tenant):
    _open(tenant, "gen-replay", timezone.now())
    _open(tenant, "gen-replay", timezone.now())
    assert activity_finish(_result("gen-replay")) is True
    later = _result("gen-replay")
    later.cost_usd = Decimal(99)  # a replay with other numbers must not rewrite history
    assert activity_finish(later) is False
    assert activity_finish(_result("gen-replay")) is False
    row = Activity.unscoped_objects.get()
    assert row.cost_usd == Decimal("0.00123") and row.attempt_count == 2
    assert Attempt.unscoped_objects.count() == 2


@pytest.mark.django_db
def test_reconciler_closes_stale_pending_rows_once(tenant):
    old = timezone.now() - timedelta(hours=3)
    for request_id, created_at in (("gen-old", old), ("gen-new", timezone.now())):
        _open(tenant, request_id, created_at)
    assert activity_reconcile_task() == 1
    assert activity_reconcile_task() == 0
    stale = Activity.unscoped_objects.get(request_id="gen-old")
    fresh = Activity.unscoped_objects.get(request_id="gen-new")
    assert (stale.status, stale.cost_usd) == ("error", 0) and "unfinished" in stale.error_message
    assert fresh.status == "pending"


@pytest.mark.django_db(transaction=True)
def test_random_requests_respect_max_price_and_totals_agree(gateway, tenant, emulator):
    rng = random.Random(5)
    emulator.control("alpha", error_rate=0.3)
    emulator.control("bravo", fail_after_tokens=3)  # bravo cuts streams after 3 tokens
    caps, accepted = {}, 0
    for index in range(40):
        cap = {"prompt": rng.choice([0.15, 0.25, 1.0]), "completion": rng.choice([0.5, 0.7, 2])}
        body = {
            "model": TEST_MODEL,
            "stream": rng.random() < 0.5,
            "max_tokens": 6,
            "messages": [{"role": "user", "content": f"q{index} {'x' * rng.randint(1, 4000)}"}],
            "provider": {"max_price": cap},
        }
        response = httpx.post(
            f"{gateway.api_url}/chat/completions",
            json=body,
            timeout=20,
            headers={"Authorization": f"Bearer {tenant.key}"},
        )
        assert response.status_code in (200, 404, 502), response.text
        accepted += response.status_code != 404  # 404: no endpoint under the cap, no row
        if response.status_code == 200:
            caps[response.headers["x-generation-id"]] = cap
    rows = wait_finished_rows(accepted)
    assert len(rows) == accepted and len(caps) > 10
    for row in rows:
        assert row.status == "success" or row.status == "error"
        if row.status == "error" and row.provider_slug == "":
            assert row.cost_usd == 0, (row.request_id, row.error_message)  # failed: free
        if row.request_id in caps:
            cap = caps[row.request_id]
            ceiling = (
                Decimal(str(cap["prompt"])) * row.prompt_tokens
                + Decimal(str(cap["completion"])) * row.completion_tokens
            ) / PER_MILLION
            assert row.cost_usd <= ceiling
    total = sum((r.cost_usd for r in rows), Decimal(0))
    api = httpx.get(
        f"{gateway.api_url}/activity", headers={"Authorization": f"Bearer {tenant.key}"}
    )
    assert Decimal(api.json()["totals"]["total_cost"]) == total
    assert api.json()["totals"]["calls"] == len(rows)
    dashboard = Client()
    dashboard.force_login(tenant.user)
    page = dashboard.get("/").content.decode()
    assert f'title="{decimal_str(total)} USD"' in page


@pytest.mark.django_db(transaction=True)
def test_load_with_disconnects_and_faults_leaves_exactly_one_row_each(gateway, tenant, emulator):
    """Hundreds of concurrent streams, some cut by the client, some failing upstream."""
    emulator.control("alpha", error_rate=0.2, output_tokens_per_s=400, default_output_tokens=30)
    emulator.control("bravo", fail_after_tokens=5, output_tokens_per_s=400)
    total, concurrency = 200, 100

    async def one(client: httpx.AsyncClient, index: int, rng: random.Random) -> str | None:
        body = {
            "model": TEST_MODEL,
            "stream": True,
            "max_tokens": 20,
            "messages": [{"role": "user", "content": f"load {index}"}],
        }
        cut_after = rng.choice([None, None, 1, 3])  # a third of clients leave mid-stream
        try:
            async with client.stream("POST", "/chat/completions", json=body) as response:
                request_id, seen = response.headers.get("x-generation-id"), 0
                async for _ in response.aiter_lines():
                    seen += 1
                    if cut_after is not None and seen >= cut_after:
                        break
        except httpx.TransportError:
            # A pooled keep-alive connection can be closed by the server just as it is
            # reused (clients cut streams here on purpose): the request may not have
            # reached the gateway. Counted, and bounded below.
            return "transport-error"
        return request_id

    async def run() -> list[str | None]:
        limit = asyncio.Semaphore(concurrency)
        headers = {"Authorization": f"Bearer {tenant.key}"}
        async with httpx.AsyncClient(
            base_url=gateway.api_url,
            headers=headers,
            timeout=30,
            limits=httpx.Limits(max_connections=concurrency),
        ) as client:

            async def bounded(index: int):
                async with limit:
                    return await one(client, index, random.Random(index))

            return await asyncio.wait_for(asyncio.gather(*(bounded(i) for i in range(total))), 120)

    ids = asyncio.run(run())
    transport_errors = ids.count("transport-error")
    rows = wait_finished_rows(total - transport_errors, timeout=60)
    by_id = {}
    for row in rows:
        by_id.setdefault(row.request_id, []).append(row)
    served_ids = [i for i in ids if i and i != "transport-error"]
    lost = [i for i in served_ids if i not in by_id]
    doubled = [i for i, group in by_id.items() if len(group) > 1]
    print(
        f"load: {total} requests, {len(rows)} rows, lost {len(lost)}, doubled "
        f"{len(doubled)}, client transport errors {transport_errors}"
    )
    assert total - transport_errors <= len(rows) <= total and not lost and not doubled
    assert len(served_ids) == total - transport_errors and transport_errors <= total // 20
    assert {r.status for r in rows} <= {"success", "error", "cancelled"}
    assert all(r.cost_usd == 0 for r in rows if r.status == "error" and not r.provider_slug)


@pytest.mark.django_db(transaction=True)
def test_no_plaintext_key_in_logs(gateway, tenant, emulator, caplog):
    caplog.set_level(logging.DEBUG)
    headers = {"Authorization": f"Bearer {tenant.key}"}
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(f"{gateway.api_url}/chat/completions", json=body, headers=headers)
    httpx.post(f"{gateway.api_url}/chat/completions", json={"model": 1}, headers=headers)
    emulator.control("alpha", status_override=500)
    emulator.control("bravo", status_override=500)
    emulator.control("charlie", status_override=500)
    httpx.post(f"{gateway.api_url}/chat/completions", json=body, headers=headers)
    wait_finished_rows(2)
    secret = tenant.key.split("_")[2]
    assert secret not in caplog.text and tenant.key not in caplog.text


@pytest.mark.django_db
def test_last_used_is_written_at_most_once_a_minute(tenant):
    start = timezone.now()
    for seconds, request_id in ((0, "gen-a"), (30, "gen-b"), (61, "gen-c")):
        _open(tenant, request_id, start + timedelta(seconds=seconds))
        tenant.api_key.refresh_from_db()
        expected = start + timedelta(seconds=0 if seconds < 61 else 61)
        assert tenant.api_key.last_used_at == expected


@pytest.mark.django_db
def test_the_batch_insert_writes_what_the_orm_writes(tenant, market):
    """The writer's lean multi-row INSERT (common.lean_sql.insert_rows, of plain rows
    from new_row) stores every field as the ORM's own save does: dates, decimals, JSON
    prices, savings, defaults, and every column of the attempts; in batches of one call
    and of several (on PostgreSQL a VALUES list, then typed arrays UNNEST-ed)."""
    from billing.ledger import ledger_write

    now = timezone.now()
    rows = {}
    # Batches of one and of five calls (five rows, ten attempts: padded to eight and
    # sixteen rows, lean_sql.padded_count).
    batched = [f"gen-batch-{n}" for n in range(1, 7)]
    later = [f"gen-later-{n}" for n in range(1, 7)]
    for request_id in ("gen-orm", *batched, *later):
        rows[request_id] = OpenRow(
            request_id, tenant.organisation.id, tenant.api_key.id, TEST_MODEL, True, now
        )
    results = {rid: _result(rid) for rid in rows}
    for result in results.values():
        result.prices = {"input": "0.27", "output": "1.1"}
        result.ttft_ms, result.hedged, result.hedge_cost_usd = 321, True, Decimal("0.0004")
        result.endpoint_id = market["alpha"].id
        loser = result.attempts[0]  # a hedge leg at an endpoint, with what it cost
        loser.endpoint_id, loser.hedge_leg = market["bravo"].id, True
        loser.ttft_ms, loser.platform_cost_usd = 1500, Decimal("0.00021")
    assert activity_finish(results["gen-orm"], rows["gen-orm"]) is True  # ORM save
    for batch in (batched[:1], batched[1:]):
        ledger_write([(rows[r], None) for r in batch] + [(rows[r], results[r]) for r in batch])
    for batch in (later[:1], later[1:]):  # streams: opened, then finished in a later batch
        ledger_write([(rows[r], None) for r in batch])
        ledger_write([(rows[r], results[r]) for r in batch])

    def stored(request_id: str) -> dict:
        row = Activity.unscoped_objects.filter(request_id=request_id).values().get()
        attempts = list(
            Attempt.unscoped_objects.filter(activity__request_id=request_id)
            .order_by("attempt_no")
            .values()
        )
        for attempt in attempts:  # every column but the keys (the batch builds plain rows)
            attempt.pop("id"), attempt.pop("activity_id")
        for name in ("id", "request_id", "finished_at"):
            row.pop(name)
        return {**row, "attempts": attempts}

    orm = stored("gen-orm")
    assert orm["list_cost_usd"] is not None and orm["prices"] == {"input": "0.27", "output": "1.1"}
    for request_id in (*batched, *later):
        assert stored(request_id) == orm, request_id
    assert (
        Activity.unscoped_objects.filter(created_at=now).count() == 13
    )  # the same instant, exactly


@pytest.mark.django_db
def test_the_lean_select_reads_what_the_orm_reads(tenant, market):
    """The writer's lean SELECT (common.lean_sql.select_rows, used to finish pending
    rows) gives the values the ORM gives, converted the same way (JSON, decimals,
    dates), in the model's ordering; fields not asked for are deferred, not wrong."""
    from django.db import transaction

    from billing.ledger import ledger_write
    from common.lean_sql import select_rows

    now = timezone.now()
    ids = ["gen-sel-1", "gen-sel-2", "gen-sel-3"]
    for offset, request_id in enumerate(ids):
        row = OpenRow(
            request_id,
            tenant.organisation.id,
            tenant.api_key.id,
            TEST_MODEL,
            True,
            now + timedelta(seconds=offset),
        )
        result = _result(request_id)
        result.prices = {"input": "0.27", "output": "1.1"}
        ledger_write([(row, None), (row, result)])
    names = (
        "request_id",
        "status",
        "model_slug",
        "prices",
        "cost_usd",
        "created_at",
        "reference_prices",
        "list_cost_usd",
    )
    with transaction.atomic():
        asked = [*ids, "gen-none", "gen-nope"]  # five: padded with NULLs to eight
        lean = select_rows(Activity, "request_id", asked, names, for_update=True)
    orm = list(Activity.unscoped_objects.filter(request_id__in=ids))
    assert [a.request_id for a in lean] == [a.request_id for a in orm] == ids[::-1]
    for got, want in zip(lean, orm, strict=True):
        for name in ("id", *names):
            assert getattr(got, name) == getattr(want, name), name
            assert type(getattr(got, name)) is type(getattr(want, name)), name
        assert got.total_ms == want.total_ms  # deferred: read on demand
    assert select_rows(Activity, "request_id", [], names) == []


@pytest.mark.django_db
def test_finishing_a_batch_of_streams_is_the_same_statements_for_any_size(tenant):
    """Finishing pending rows is one SELECT, one UPDATE and one INSERT of attempts per
    batch, never a statement per row (``executemany``): under load each statement of
    SQLite's cost the writer a GIL switch interval, and 200 rows took a second
    (docs/benchmarks.md, round 14). The rows are finished as the ORM would."""
    from django.db import connection

    from billing.ledger import ledger_write

    def finish_statements(size: int) -> list[tuple[str, bool]]:
        now = timezone.now()
        rows = _open_rows(tenant, f"gen-size-{size}-", size, now)
        ledger_write([(row, None) for row in rows])
        seen: list[tuple[str, bool]] = []

        def record(execute, sql, params, many, context):
            seen.append((sql.split()[0], many))
            # PostgreSQL: few enough parameters for psycopg to cache the statement's parse
            assert connection.vendor != "postgresql" or len(params or ()) <= 50, sql[:80]
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            ledger_write([(row, _result(row.request_id)) for row in rows])
        finished = Activity.unscoped_objects.filter(request_id__startswith=f"gen-size-{size}-")
        assert finished.filter(status="success", completion_tokens=5).count() == size
        assert Attempt.unscoped_objects.filter(activity__in=finished).count() == 2 * size
        return seen

    finish_statements(2)  # warm: the key's last use, the savings' price lookups
    small, large = finish_statements(3), finish_statements(150)
    assert small == large
    assert not any(many for _, many in large)
    assert [verb for verb, _ in large].count("UPDATE") == 1


@pytest.mark.django_db
def test_the_writer_prepares_a_few_statements_whatever_its_batch_sizes(tenant, market):
    """Batches of every size from 1 to 40 calls (opened, heartbeats of unserved and of
    served streams, finished) run a handful of statement texts, not one per size: the
    database driver keeps a connection's last 128 prepared statements, and a hundred
    rows' statement each held ~50 MB per writer thread that no Python tool sees
    (docs/benchmarks.md, round 15). The rows are written as asked all the same."""
    from django.db import connection

    from billing.ledger import ledger_write

    texts: set[str] = set()

    def record(execute, sql, params, many, context):
        texts.add(sql)
        # PostgreSQL: padding never takes a statement past what psycopg caches the parse of
        assert connection.vendor != "postgresql" or len(params or ()) <= 50, sql[:80]
        return execute(sql, params, many, context)

    now = timezone.now()
    sizes = range(1, 41)
    with connection.execute_wrapper(record):
        for size in sizes:
            rows = _open_rows(tenant, f"gen-few-{size}-", size, now)
            ledger_write([(row, None) for row in rows])
            ledger_write([(row, Checkpoint(row.request_id, now)) for row in rows])
            served = [_alpha_beat(row, now, market, completion_tokens=3) for row in rows]
            ledger_write(list(zip(rows, served, strict=True)))
            ledger_write([(row, _result(row.request_id)) for row in rows])
    done = Activity.unscoped_objects.filter(request_id__startswith="gen-few-")
    assert done.filter(status="success", completion_tokens=5).count() == sum(sizes)
    assert Attempt.unscoped_objects.filter(activity__in=done).count() == 2 * sum(sizes)
    # A statement's text per power of two of rows (1 to 64: seven) and kind (opening,
    # two heartbeats, the finishing SELECT, UPDATE and attempts' INSERT), and a few
    # fixed ones; one text per size would be 40 per kind.
    assert len(texts) <= 7 * 6 + 10, len(texts)


def _orphan_batch(tenant, market):
    """A batch of three calls: one whose organisation, one whose key and endpoint were
    deleted while it ran, and one that is fine (``ledger_write`` items, request ids)."""
    from providers.models import Endpoint

    doomed = make_tenant("Doomed")
    other_key, _ = api_key_create(organisation=tenant.organisation, name="revoked mid-call")
    gone_endpoint = market["bravo"]
    now = timezone.now()
    rows = {
        "gen-org-gone": OpenRow(
            "gen-org-gone", doomed.organisation.id, doomed.api_key.id, TEST_MODEL, True, now
        ),
        "gen-key-gone": OpenRow(
            "gen-key-gone", tenant.organisation.id, other_key.id, TEST_MODEL, True, now
        ),
        "gen-fine": OpenRow(
            "gen-fine", tenant.organisation.id, tenant.api_key.id, TEST_MODEL, True, now
        ),
    }
    results = {rid: _result(rid) for rid in rows}
    for result in results.values():
        result.endpoint_id = gone_endpoint.id
        result.attempts[0].endpoint_id = gone_endpoint.id
        result.attempts[1].endpoint_id = market["alpha"].id
    doomed.organisation.delete()
    other_key.delete()
    Endpoint.objects.filter(id=gone_endpoint.id).delete()
    return [(row, None) for row in rows.values()] + [(rows[r], results[r]) for r in rows]


def _assert_orphans_handled(market) -> None:
    assert not Activity.unscoped_objects.filter(request_id="gen-org-gone").exists()
    fine = Activity.unscoped_objects.get(request_id="gen-fine")
    assert fine.status == "success" and fine.cost_usd == Decimal("0.00123")
    unlinked = Activity.unscoped_objects.get(request_id="gen-key-gone")
    assert unlinked.status == "success" and unlinked.cost_usd == Decimal("0.00123")
    assert unlinked.api_key_id is None and unlinked.endpoint_id is None
    endpoints = list(unlinked.attempts.order_by("attempt_no").values_list("endpoint_id", flat=True))
    assert endpoints == [None, market["alpha"].id]


@pytest.mark.django_db(transaction=True)
def test_a_row_whose_parent_was_deleted_mid_call_does_not_fail_its_batch(tenant, market):
    """An organisation deleted while its call ran: its row is dropped; a key or endpoint
    deleted: the row is written (billed, shown) without the link; the rest of the batch
    is written as usual. The batch as a whole fails on the foreign keys (so this goes
    through the row-by-row path), and no row raises: a raise would make the writer
    retry the batch for ever."""
    from billing.ledger import ledger_write

    ledger_write(_orphan_batch(tenant, market))
    _assert_orphans_handled(market)


@pytest.mark.django_db(transaction=True)
def test_the_ledger_writer_is_not_stuck_behind_an_orphaned_row(tenant, market):
    """Through the process's real writer: the batch with orphans is written, and a call
    queued after it is written too (before the fix the writer retried that batch for
    ever and every later row of the process waited behind it)."""
    from billing.ledger_writer import ledger_writer

    later = OpenRow(
        "gen-after", tenant.organisation.id, tenant.api_key.id, TEST_MODEL, True, timezone.now()
    )

    async def write_all() -> None:
        for item in _orphan_batch_items:
            ledger_writer.put(item)
        ledger_writer.put((later, _result("gen-after")))
        async with asyncio.timeout(20):
            while ledger_writer.pending():  # noqa: ASYNC110 - polled
                await asyncio.sleep(0.02)

    _orphan_batch_items = _orphan_batch(tenant, market)
    asyncio.run(write_all())
    _assert_orphans_handled(market)
    assert Activity.unscoped_objects.get(request_id="gen-after").status == "success"


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_naming_a_deleted_endpoint_still_beats(tenant, market):
    """A checkpoint of a stream whose endpoint was deleted mid-call marks its row alive
    (without the numbers) instead of failing the writer's batch."""
    from billing.ledger import ledger_write
    from providers.models import Endpoint

    now = timezone.now()
    row = OpenRow("gen-beat", tenant.organisation.id, tenant.api_key.id, TEST_MODEL, True, now)
    ledger_write([(row, None)])
    gone = market["bravo"].id
    Endpoint.objects.filter(id=gone).delete()
    beat = Checkpoint(
        "gen-beat",
        now + timedelta(seconds=5),
        endpoint_id=gone,
        provider_slug="bravo",
        completion_tokens=7,
        cost_usd=Decimal("0.001"),
    )
    ledger_write([(row, beat)])
    stored = Activity.unscoped_objects.get(request_id="gen-beat")
    assert stored.status == "pending" and stored.heartbeat_at == beat.at
    assert stored.endpoint_id is None and stored.completion_tokens == 0


@pytest.mark.django_db
def test_a_heartbeat_of_many_streams_is_the_same_statements_for_any_number(tenant, market):
    """One beat checkpoints every served stream in one UPDATE (not one per call: a beat of
    2,000 long streams was 2,000 statements, each costing the writer a GIL switch under
    load), each row with its own numbers; a finished row is left alone, and of two beats
    of one call the newer wins."""
    from django.db import connection

    from billing.ledger import ledger_write

    endpoint = market["alpha"]

    def beat(count: int) -> list[str]:
        now = timezone.now()
        rows = _open_rows(tenant, f"gen-beat-{count}-", count, now)
        ledger_write([(row, None) for row in rows])
        ledger_write([(rows[0], _result(rows[0].request_id))])  # finished before the beat

        def checkpoint(n: int, tokens: int) -> Checkpoint:
            return _alpha_beat(
                rows[n],
                now + timedelta(seconds=tokens),
                market,
                prompt_tokens=100 + n,
                completion_tokens=tokens,
                cost_usd=Decimal(n) / 1000,
                prices={"output": str(n)},
            )

        beats = [checkpoint(n, 7) for n in range(count)] + [checkpoint(count - 1, 9)]
        seen: list[str] = []

        def record(execute, sql, params, many, context):
            assert not many
            seen.append(sql.split()[0])
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            ledger_write([(rows[0], c) for c in beats])
        stored = {
            a.request_id: a
            for a in Activity.unscoped_objects.filter(request_id__in=[r.request_id for r in rows])
        }
        assert stored[rows[0].request_id].status == "success"
        assert stored[rows[0].request_id].completion_tokens == 5  # the finished row is kept
        for n in range(1, count):
            got = stored[rows[n].request_id]
            tokens = 9 if n == count - 1 else 7
            assert got.status == "pending" and got.endpoint_id == endpoint.id
            assert (got.prompt_tokens, got.completion_tokens) == (100 + n, tokens)
            assert got.cost_usd == Decimal(n) / 1000 and got.prices == {"output": str(n)}
            assert got.heartbeat_at == now + timedelta(seconds=tokens) and got.usage_estimated
        return seen

    assert beat(3) == beat(120)


@pytest.mark.django_db(transaction=True)
def test_the_reconciler_keeps_a_checkpoints_reported_usage_exact(tenant, market):
    """A stream whose provider had reported its usage when its process died is closed
    with that usage, not marked estimated; one that had only delivered tokens is."""
    from billing.ledger import activity_reconcile, ledger_write

    then = timezone.now() - timedelta(seconds=60)
    rows = [
        OpenRow(f"gen-{name}", tenant.organisation.id, tenant.api_key.id, TEST_MODEL, True, then)
        for name in ("reported", "delivered")
    ]
    ledger_write([(row, None) for row in rows])
    beats = [
        _alpha_beat(
            row,
            then,
            market,
            prompt_tokens=10,
            completion_tokens=20,
            cost_usd=Decimal("0.00001"),
            prices={"output": "0.5"},
            usage_estimated=estimated,
        )
        for row, estimated in zip(rows, (False, True), strict=True)
    ]
    ledger_write([(row, beat) for row, beat in zip(rows, beats, strict=True)])
    assert activity_reconcile(older_than_s=30) == 2
    closed = {a.request_id: a for a in Activity.unscoped_objects.all()}
    assert not closed["gen-reported"].usage_estimated and closed["gen-delivered"].usage_estimated
    assert {a.status for a in closed.values()} == {"error"}
    assert all(
        a.completion_tokens == 20 and a.cost_usd == Decimal("0.00001") for a in closed.values()
    )

"""The load test's parts: its client against the real emulator, the pausable proxy over
real sockets, and the figures' verdicts on recorded outcomes."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from lab.benchmark import figures
from lab.benchmark.faultclient import Cut, Reply, request
from lab.benchmark.figures import Row
from lab.benchmark.tcpproxy import PausableProxy
from lab.emulator.server import EmulatorServer

PROFILE = {
    "seed": 1,
    "time_scale": 1.0,
    "providers": {
        "p": {
            "models": ["m"],
            "ttft_base_s": 0.3,
            "jitter": {"kind": "none"},
            "output_tokens_per_s": 200,
            "default_output_tokens": 20,
        }
    },
}


@pytest.fixture(scope="module")
def emulator():
    with EmulatorServer(PROFILE) as server:
        yield server


def body(run: str, index: int) -> bytes:
    content = figures.tag(run, index) + "hi"
    return orjson.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": content}]}
    )


async def send(emulator: EmulatorServer, reply: Reply, run: str = "t1") -> Reply:
    url = f"{emulator.provider_url('p')}/chat/completions"
    return await request(url, body(run, reply.index), "unused", reply, 10.0)


async def test_client_reads_a_whole_stream(emulator) -> None:
    reply = await send(emulator, Reply(index=0))
    assert reply.status == 200 and reply.kind == "sse" and reply.done and reply.served
    assert reply.tokens == 20 and reply.cut_at is None


async def test_client_cut_after_tokens_closes_the_upstream(emulator) -> None:
    emulator.reset()
    reply = await send(emulator, Reply(index=1, cut=Cut(tokens=3)))
    assert reply.cut_at is not None and not reply.done and 3 <= reply.tokens < 20
    record = await asyncio.to_thread(
        emulator.wait_for, lambda r: r["status"] == "cancelled", provider="p"
    )
    upstream = figures.upstream_by_index([record], "t1")
    assert list(upstream) == [1]
    outcome, delay = figures.upstream_close(reply, upstream[1])
    assert outcome == "closed" and delay is not None


async def test_client_cut_before_the_first_token(emulator) -> None:
    reply = await send(emulator, Reply(index=2, cut=Cut(delay_s=0.05)))
    assert reply.cut_at is not None and reply.tokens == 0 and not reply.served


async def test_json_error_is_classified_json(emulator) -> None:
    url = f"{emulator.provider_url('p')}/chat/completions"
    reply = await request(url, b"{not json", "unused", Reply(index=3), 10.0)
    assert reply.status == 400 and reply.kind == "json" and reply.json_body is True


async def test_proxy_holds_bytes_while_paused(emulator) -> None:
    proxy = PausableProxy("127.0.0.1", emulator.port)
    port = await proxy.start()
    url = f"http://127.0.0.1:{port}/p/v1/chat/completions"
    try:
        assert (await request(url, body("px", 0), "k", Reply(index=0), 10.0)).served
        proxy.pause()
        paused = asyncio.ensure_future(request(url, body("px", 1), "k", Reply(index=1), 10.0))
        for _ in range(500):  # until the proxy has accepted the second connection
            if proxy.connections >= 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert not paused.done()  # accepted, but nothing forwarded
        proxy.resume()
        assert (await paused).served
    finally:
        await proxy.close()


def reply(index: int, **fields) -> Reply:
    made = Reply(index=index)
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def record(index: int, status: str, ended_at: float | None, sent: int = 5) -> dict:
    return {
        "last_message_head": figures.tag("r", index) + "x",
        "status": status,
        "ended_at": ended_at,
        "received_at": 99.0,
        "completion_tokens_sent": sent,
    }


def row(key: int, status: str, tokens: int = 0, rid: str = "") -> Row:
    return Row(rid or f"gen-{key}", key, status, 200, tokens)


def test_cuts_verdicts() -> None:
    replies = [
        reply(0, status=200, done=True, tokens=50, content_type="text/event-stream"),
        reply(1, status=200, cut_at=100.0, tokens=4, content_type="text/event-stream"),
        reply(2, status=200, cut_at=100.0, tokens=7, content_type="text/event-stream"),
        reply(3, cut_at=100.0),  # cut before headers, never reached the upstream
        reply(4, status=500, content_type="text/html", json_body=None),
    ]
    records = [
        record(0, "completed", 90.0, 50),
        record(1, "cancelled", 100.2),
        record(2, "completed", 101.5, 50),  # ran on after the cut, row success: ignored
        {"last_message_head": "loadtest other #1 x", "status": "completed", "ended_at": 1.0},
    ]
    upstream = figures.upstream_by_index(records, "r")
    assert sorted(upstream) == [0, 1, 2]
    rows = {
        0: [row(0, "success", 50)],
        1: [row(1, "cancelled", 3)],
        2: [row(2, "success", 50)],
        4: [row(4, "error"), row(4, "error", rid="gen-x")],
    }
    found, targets = figures.cuts(replies, upstream, rows)
    verdict = {label: met for label, met, _ in targets}
    assert found["upstream after a cut"] == {
        "closed": 1,
        "ran-on (row success)": 1,
        "never-opened": 1,
    }
    assert found["rejected before acceptance (no row expected)"] == 1
    assert found["cut rows billed fewer tokens than delivered"] == 1
    assert found["rows lost / doubled / pending"] == {"lost": 0, "doubled": 1, "pending": 0}
    assert found["responses neither JSON nor SSE"] == 1
    assert verdict["every disconnect honoured (upstream closed)"] is False
    assert verdict["upstream closed <= 1 s after the cut (p99)"] is False  # ran on 1.5 s
    assert verdict["cut rows cancelled with the delivered tokens billed"] is False
    assert verdict["completed streams recorded as success"] is True
    assert verdict["0 rows lost, doubled or pending"] is False


def test_a_lost_row_and_an_upstream_racing_the_cut() -> None:
    replies = [reply(0, status=200, cut_at=100.0, tokens=49, content_type="text/event-stream")]
    upstream = figures.upstream_by_index([record(0, "completed", 100.05, 50)], "r")
    found, _ = figures.cuts(replies, upstream, {})
    assert found["upstream after a cut"] == {"ended-with-cut": 1}
    assert found["rows lost / doubled / pending"]["lost"] == 1


def test_a_success_row_is_right_only_for_a_stream_relayed_whole_before_the_cut() -> None:
    stream = dict(status=200, cut_at=100.0, content_type="text/event-stream")
    replies = [
        reply(0, tokens=48, **stream),  # the provider finished as the client cut
        reply(1, tokens=50, **stream),  # finished before the cut
        reply(2, tokens=20, **stream),  # cut mid-stream, the gateway closed the upstream
        reply(3, **{**stream, "status": 0}),  # cut while its key was being read
    ]
    records = [
        record(0, "completed", 100.01, 50),
        record(1, "completed", 99.0, 50),
        record(2, "cancelled", 100.05, 21),
    ]
    upstream = figures.upstream_by_index(records, "r")
    rows = {0: [row(0, "success", 50)], 1: [row(1, "success", 50)], 2: [row(2, "cancelled", 21)]}
    _, targets = figures.cuts(replies, upstream, rows)
    verdict = {label: met for label, met, _ in targets}
    assert verdict["cut rows cancelled with the delivered tokens billed"] is True
    rows[2] = [row(2, "success", 21)]  # a stream cut mid-way stored as a success: wrong
    _, targets = figures.cuts(replies, upstream, rows)
    verdict = {label: met for label, met, _ in targets}
    assert verdict["cut rows cancelled with the delivered tokens billed"] is False


def test_an_upstream_left_running_with_a_cancelled_row_is_not_honoured() -> None:
    replies = [reply(0, status=200, cut_at=100.0, tokens=3, content_type="text/event-stream")]
    upstream = figures.upstream_by_index([record(0, "completed", 100.8, 50)], "r")
    found, targets = figures.cuts(replies, upstream, {0: [row(0, "cancelled", 3)]})
    verdict = {label: met for label, met, _ in targets}
    assert found["upstream after a cut"] == {"ran-on (row cancelled)": 1}
    assert verdict["every disconnect honoured (upstream closed)"] is False
    assert verdict["upstream closed <= 1 s after the cut (p99)"] is True  # 800 ms
    assert verdict["cut rows cancelled with the delivered tokens billed"] is True


def test_burst_and_steady_verdicts() -> None:
    ok = dict(status=200, done=True, content_type="text/event-stream")
    replies = [
        reply(0, generation_id="gen-0", **ok),
        reply(1, status=503, content_type="application/json", json_body=True, retry_after="1"),
        reply(2, status=500, content_type="text/html"),
        reply(3, generation_id="gen-3", **ok),
    ]
    rows = [row(0, "success", 50), row(9, "pending")]
    found, targets = figures.burst(replies, rows)
    verdict = {label: met for label, met, _ in targets}
    assert found["rows (by X-Generation-Id)"] == {
        "lost": 1,
        "pending": 1,
        "doubled or unmatched": 1,
    }
    assert verdict == {
        "only 200s and JSON 429/503": False,
        "429/503 carry Retry-After": True,
        "0 rows lost or pending": False,
    }
    for index, sent_at in enumerate((1.0, 5.0, 6.0, 20.0)):
        replies[index].sent_at = sent_at
    found, targets = figures.steady(replies, rows, (4.0, 14.0), "redis-outage")
    assert found["served (200 + [DONE])"] == "2 (50.0%)"
    assert found["sent during the fault"].startswith("0/2 served")
    assert [met for _, met, _ in targets] == [False, False, False]


async def test_client_cut_after_headers_before_a_token(emulator) -> None:
    emulator.reset()
    reply = await send(emulator, Reply(index=5, cut=Cut(after_headers_s=0.05)))
    assert reply.status == 200 and reply.cut_at is not None and reply.tokens == 0
    record = await asyncio.to_thread(
        emulator.wait_for, lambda r: r["status"] == "cancelled", provider="p"
    )
    assert record["completion_tokens_sent"] == 0


@pytest.mark.django_db
def test_per_request_keys_and_rows_of_the_loadtest_organisation() -> None:
    from billing.keys import parse_key, secret_matches
    from billing.models import ApiKey
    from lab.benchmark import rows as ledger

    org = ledger.organisation()
    keys = ledger.create_keys(org, 3, "loadtest t")
    assert len({key_id for key_id, _ in keys}) == 3
    for key_id, plaintext in keys:
        stored = ApiKey.unscoped_objects.get(id=key_id)
        parsed = parse_key(plaintext)
        assert parsed.prefix == stored.prefix and secret_matches(parsed.secret, stored.secret_hash)
        assert stored.organisation == org and stored.last_used_at is not None
    assert ledger.organisation() == org  # a second run starts empty
    assert not ApiKey.unscoped_objects.filter(organisation=org).exists()

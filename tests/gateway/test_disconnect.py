"""A client that goes away cancels the upstream request and leaves one finished row."""

import socket
import time

import orjson
import pytest

from ..support import TEST_MODEL, wait_finished_rows

pytestmark = pytest.mark.django_db(transaction=True)


def _raw_request(gateway, key: str, body: dict) -> socket.socket:
    payload = orjson.dumps(body)
    head = (
        f"POST /api/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection((gateway.host, gateway.port), timeout=10)
    sock.sendall(head + payload)
    return sock


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = sock.recv(4096)
        assert chunk, "connection closed early"
        data += chunk
    return data


def test_disconnect_mid_stream_cancels_upstream(gateway, tenant, emulator):
    emulator.control("alpha", output_tokens_per_s=10, default_output_tokens=200)
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    sock = _raw_request(gateway, tenant.key, body)
    _read_until(sock, b'"content":"')  # the first tokens have reached us
    sock.close()
    closed_at = time.time()
    record = emulator.wait_for(lambda r: r["status"] == "cancelled", provider="alpha", timeout=3)
    assert record["ended_at"] - closed_at < 0.5
    assert record["completion_tokens_sent"] < 200
    rows = wait_finished_rows(1)
    assert len(rows) == 1
    assert rows[0].status == "cancelled" and rows[0].provider_slug == "alpha"
    assert rows[0].attempts.get().outcome == "cancelled"


def test_disconnect_before_first_token_cancels_upstream(gateway, tenant, emulator):
    emulator.control("alpha", ttft_base_s=5.0)
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    sock = _raw_request(gateway, tenant.key, body)
    emulator.wait_for(
        lambda r: r["status"] is None or r["first_token_at"] is None, provider="alpha", timeout=3
    )
    time.sleep(0.1)
    sock.close()
    closed_at = time.time()
    record = emulator.wait_for(lambda r: r["status"] == "cancelled", provider="alpha", timeout=3)
    assert record["first_token_at"] is None
    assert record["ended_at"] - closed_at < 0.5
    rows = wait_finished_rows(1)
    assert len(rows) == 1 and rows[0].status == "cancelled"
    assert rows[0].cost_usd == 0

"""HTTP helpers for tests that drive gateway processes by their base URL."""

from __future__ import annotations

import re
import time

import httpx

from ..support import TEST_MODEL


def chat(base_url: str, key: str, **body) -> httpx.Response:
    payload = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], **body}
    return httpx.post(
        f"{base_url}/api/v1/chat/completions",
        json=payload,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def status_within(base_url: str, key: str, expected: int, seconds: float = 1.0, **body) -> int:
    """Poll until a chat call (``body`` added to a "hi") answers ``expected`` or
    ``seconds`` passed; the last status."""
    deadline = time.monotonic() + seconds
    status = chat(base_url, key, **body).status_code
    while status != expected and time.monotonic() < deadline:
        time.sleep(0.02)
        status = chat(base_url, key, **body).status_code
    return status


def dashboard_session(base_url: str, username: str, password: str = "pw-123456789") -> httpx.Client:
    """A logged-in dashboard session (the real login form, CSRF included)."""
    client = httpx.Client(base_url=base_url, timeout=10)
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    assert client.post("/login/", data=form).status_code == 302
    return client


def dashboard_post(client: httpx.Client, path: str, data: dict | None = None) -> None:
    form = {**(data or {}), "csrfmiddlewaretoken": client.cookies["csrftoken"]}
    response = client.post(path, data=form)
    assert response.status_code in (200, 302), response.text[:500]


def redis_available(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False

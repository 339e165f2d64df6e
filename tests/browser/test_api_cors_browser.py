"""CORS in Chromium: a page served from another origin (a second local server) calls the
live gateway with ``fetch()`` and an API key. Authorization and a JSON content type make
every call preflighted, so a reply proves the preflight passed: a streamed chat
completion read chunk by chunk, a streamed Responses call, an error the page can read,
the model list. With the origins setting naming another origin, the browser refuses.
Skipped when Playwright or /usr/bin/chromium is missing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.conf import settings

from ..support import TEST_MODEL
from .helpers import browser_page

pytestmark = pytest.mark.django_db(transaction=True)
UNAUTHORIZED = "Failed to load resource: the server responded with a status of 401 (Unauthorized)"
PAGE = b"<!doctype html><title>another origin</title><p>A client page.</p>"
CALL = """async ({url, key, body}) => {
  const init = {headers: {"Authorization": `Bearer ${key}`}};
  if (body) {
    Object.assign(init, {method: "POST", body: JSON.stringify(body)});
    init.headers["Content-Type"] = "application/json";
  }
  const reply = await fetch(url, init);
  const reader = reply.body.getReader();
  const decoder = new TextDecoder();
  let text = "", reads = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    reads += 1;
    text += decoder.decode(value, {stream: true});
  }
  return {status: reply.status, type: reply.headers.get("content-type"),
          generation: reply.headers.get("x-generation-id"), text, reads};
}"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def other_origin() -> Iterator[str]:
    """A page on another origin than the gateway's (same host, another port)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _fetch(page, url: str, key: str, body: dict | None = None) -> dict:
    return page.evaluate(CALL, {"url": url, "key": key, "body": body})


def _chat(stream: bool = True) -> dict:
    messages = [{"role": "user", "content": "Hello from another origin"}]
    return {"model": TEST_MODEL, "messages": messages, "stream": stream}


def test_a_page_on_another_origin_calls_the_api(playwright_api, gateway, tenant, other_origin):
    api = gateway.api_url
    with browser_page(playwright_api) as (page, problems):
        page.goto(f"{other_origin}/client.html")
        chat = _fetch(page, f"{api}/chat/completions", tenant.key, _chat())
        responses = _fetch(
            page,
            f"{api}/responses",
            tenant.key,
            {"model": TEST_MODEL, "input": "Hi", "stream": True},
        )
        refused = _fetch(page, f"{api}/chat/completions", "ullm_wrong", _chat(stream=False))
        models = _fetch(page, f"{gateway.base_url}/v1/models", tenant.key)
    # Chromium logs the 401 it was given; nothing else, and no CORS complaint.
    assert problems == [f"console: {UNAUTHORIZED}"], problems
    assert (chat["status"], chat["type"]) == (200, "text/event-stream")
    assert chat["text"].count("data: ") > 2 and chat["text"].endswith("data: [DONE]\n\n")
    assert chat["reads"] >= 1 and chat["generation"].startswith("gen-")  # exposed header
    assert responses["status"] == 200 and "event: response.completed" in responses["text"]
    assert refused["status"] == 401 and '"error"' in refused["text"]
    assert models["status"] == 200 and TEST_MODEL in models["text"]


def test_an_origin_not_allowed_is_refused_by_the_browser(
    playwright_api,
    gateway,
    tenant,
    other_origin,
    monkeypatch,
):
    monkeypatch.setitem(settings.UBERLLM, "CORS_ALLOWED_ORIGINS", ["https://app.example"])
    with browser_page(playwright_api) as (page, problems):
        page.goto(f"{other_origin}/client.html")
        with pytest.raises(playwright_api.Error, match="Failed to fetch"):
            _fetch(page, f"{gateway.api_url}/chat/completions", tenant.key, _chat())
    assert any("CORS" in problem for problem in problems), problems

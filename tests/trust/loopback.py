"""A real HTTP server on loopback that records what it receives (a stand-in for a host
an attacker controls), for the credential and egress tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = tuple[int, str, bytes]  # status, content type, body


class RecordingServer:
    """Answers every request with ``status`` and a small JSON body (or what ``reply``
    makes of the request's headers); keeps the headers."""

    def __init__(
        self,
        status: int = 500,
        host: str = "127.0.0.1",
        reply: Callable[[dict[str, str]], Reply] | None = None,
    ) -> None:
        self.requests: list[dict[str, str]] = []
        owner = self
        default: Reply = (status, "application/json", b'{"error": {"message": "recorded"}}')

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                owner.requests.append(headers)
                code, content_type, body = reply(headers) if reply else default
                self.send_response(code)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self.port = self._server.server_address[1]
        self.base_url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

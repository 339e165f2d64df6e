"""``EmulatorServer``: run the emulator under uvicorn in a background thread.

Example::

    with EmulatorServer({"time_scale": 0.01, "providers": {...}}) as emu:
        client = OpenAI(base_url=emu.provider_url("novacloud"), api_key="x")
        ...
        emu.log(provider="novacloud")
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from .app import EmulatorApp, create_app


class EmulatorServer:
    """A live emulator on ``host:port`` (port 0 = a free port), usable as a context manager."""

    def __init__(
        self,
        profiles: Mapping[str, Any] | str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int | None = None,
        time_scale: float | None = None,
    ) -> None:
        self.app: EmulatorApp = create_app(profiles, seed=seed, time_scale=time_scale)
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._client: httpx.Client | None = None

    @property
    def base_url(self) -> str:
        """e.g. ``http://127.0.0.1:8100`` (valid after ``start()``)."""
        return f"http://{self.host}:{self.port}"

    def provider_url(self, slug: str) -> str:
        """OpenAI base URL of one provider: ``base_url/slug/v1``."""
        return f"{self.base_url}/{slug}/v1"

    def start(self, timeout: float = 10.0) -> EmulatorServer:
        """Bind, start uvicorn in a daemon thread and wait until it accepts requests."""
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="emulator", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise RuntimeError("emulator server failed to start")
            time.sleep(0.005)
        self._client = httpx.Client(base_url=self.base_url, timeout=10.0)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Shut the server down (open streams get about a second to finish)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)
        self._server = self._thread = None

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _http(self) -> httpx.Client:
        if self._client is None:
            raise RuntimeError("emulator server is not running")
        return self._client

    def log(self, provider: str | None = None) -> list[dict[str, Any]]:
        """Log records (oldest first) via ``GET /_log``, optionally of one provider."""
        params = {"provider": provider} if provider else None
        response = self._http().get("/_log", params=params)
        response.raise_for_status()
        return response.json()

    def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        provider: str | None = None,
        timeout: float = 2.0,
        interval: float = 0.01,
    ) -> dict[str, Any]:
        """Poll the log until a record satisfies ``predicate``; return it or raise TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            for record in self.log(provider):
                if predicate(record):
                    return record
            if time.monotonic() > deadline:
                raise TimeoutError("no matching emulator log record")
            time.sleep(interval)

    def control(self, slug: str, **overrides: Any) -> dict[str, Any]:
        """Merge overrides into a live profile (``reset=True`` restores the file's first)."""
        response = self._http().post(f"/_control/{slug}", json=overrides)
        response.raise_for_status()
        return response.json()

    def reset(self, *, profiles: bool = False) -> None:
        """Clear log, caches and RNGs; with ``profiles=True`` also drop all overrides."""
        self._http().post("/_reset", json={"profiles": profiles}).raise_for_status()

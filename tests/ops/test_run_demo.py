"""``make run`` (``manage.py run_demo``): a busy port stops it before the banner, with a
clear message, a non-zero exit and no key printed or created; a running demo sets a
metrics scraper token and its banner's curl line scrapes ``/metrics``."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management.base import CommandError

from lab.management.commands.run_demo import check_ports, port_problem

from ..support import free_port

STORES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")


def _env(var: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*STORES, "UBERLLM_METRICS_TOKEN")}
    return {**env, "UBERLLM_VAR_DIR": str(var), "UBERLLM_READ_DOT_ENV": "false"}


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_port_check_names_the_busy_port_and_how_to_choose_another(busy_port):
    assert "already in use" in port_problem(busy_port)
    assert port_problem(free_port()) == ""
    with pytest.raises(CommandError, match=rf"port {busy_port} is already in use.*PORT=<port>"):
        check_ports(port=busy_port, emulator_port=free_port())
    with pytest.raises(CommandError, match="EMULATOR_PORT=<port>"):
        check_ports(port=free_port(), emulator_port=busy_port)
    with pytest.raises(CommandError, match="both"):
        check_ports(port=busy_port, emulator_port=busy_port)


@pytest.mark.parametrize("which", ["--port", "--emulator-port"])
def test_a_busy_port_fails_before_the_banner_with_a_non_zero_exit(tmp_path, busy_port, which):
    ports = {"--port": free_port(), "--emulator-port": free_port(), which: busy_port}
    argv = [sys.executable, "manage.py", "run_demo", "--no-celery"]
    argv += [str(part) for pair in ports.items() for part in pair]
    done = subprocess.run(
        argv, env=_env(tmp_path), cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert f"port {busy_port} is already in use" in done.stderr
    assert "make run" in done.stderr
    output = done.stdout + done.stderr
    assert "UberLLM is up" not in output and "ullm_" not in output
    assert not (tmp_path / "demo_api_key.txt").exists()  # nothing was seeded


def _banner(demo: subprocess.Popen, deadline: float) -> str:
    lines = []
    while time.monotonic() < deadline:
        line = demo.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Ctrl-C stops everything" in line:
            return "".join(lines)
    raise AssertionError("no banner:\n" + "".join(lines))


def test_the_demo_sets_a_metrics_token_and_prints_how_to_scrape(tmp_path):
    env, base = _env(tmp_path), settings.BASE_DIR
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, cwd=base, check=True)
    port = free_port()
    argv = [
        sys.executable,
        "manage.py",
        "run_demo",
        "--no-celery",
        "--port",
        str(port),
        "--emulator-port",
        str(free_port()),
    ]
    demo = subprocess.Popen(
        argv, env=env, cwd=base, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        banner = _banner(demo, time.monotonic() + 90)
        assert "UberLLM is up." in banner
        curl = re.search(r"curl .*/metrics", banner).group(0)
        words = shlex.split(curl)
        header, url = words[2], words[3]
        assert url == f"http://127.0.0.1:{port}/metrics"
        token = (tmp_path / "demo_metrics_token.txt").read_text().strip()
        assert header == f"Authorization: Bearer {token}"
        scraped = httpx.get(url, headers={"Authorization": header.split(": ", 1)[1]})
        assert scraped.status_code == 200 and "# TYPE" in scraped.text
        assert httpx.get(url).status_code == 401  # a token is needed, and one is set
    finally:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(demo.pid, signal.SIGKILL)

"""A fleet on one machine: gateway instances (uvicorn, N workers each) behind nginx, a
Celery worker and one beat, on shared PostgreSQL and Redis (and optionally the
emulator). Used by ``manage.py fleet`` (run it) and the fleet tests (exercise it).

Every run has its own folder (``var/fleet/<name>/``: logs, the rendered nginx config and
prefix, the Prometheus multiprocess folder, beat's schedule), emptied at start. Each
process is started in its own session, so an instance (uvicorn's master and workers)
is signalled or killed as one process group.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from django.conf import settings

NGINX_TEMPLATE = Path(settings.BASE_DIR) / "deploy" / "nginx" / "uberllm.conf"
GATEWAY_APP = "uberllm.asgi:application"


class FleetError(RuntimeError):
    pass


def render_nginx_config(listen: str, servers: list[str]) -> str:
    """deploy/nginx/uberllm.conf with its placeholders filled: nginx listening on
    ``listen`` (address:port), balancing over ``servers`` (host:port each)."""
    lines = "\n".join(f"        server {server} max_fails=1 fail_timeout=2s;" for server in servers)
    text = NGINX_TEMPLATE.read_text()
    return text.replace("{{UPSTREAM_SERVERS}}", lines).replace("{{LISTEN}}", listen)


@dataclass
class FleetConfig:
    run_dir: Path
    lb_port: int
    gateway_ports: list[int]
    env: dict[str, str]
    workers_per_gateway: int = 2
    drain_timeout_s: float = 30.0
    celery: bool = True
    emulator_profiles: str | None = None  # start the emulator with these profiles
    emulator_port: int = 8100
    nginx: str = field(default_factory=lambda: shutil.which("nginx") or "/usr/sbin/nginx")


class Fleet:
    def __init__(self, config: FleetConfig) -> None:
        self.config = config
        self.procs: dict[str, subprocess.Popen] = {}
        self.in_balancer = list(range(len(config.gateway_ports)))

    # --- paths and urls -----------------------------------------------------------
    @property
    def lb_url(self) -> str:
        return f"http://127.0.0.1:{self.config.lb_port}"

    def gateway_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.config.gateway_ports[index]}"

    @property
    def nginx_prefix(self) -> Path:
        return self.config.run_dir / "nginx"

    @property
    def metrics_dir(self) -> Path:
        return self.config.run_dir / "prometheus"

    # --- processes ----------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        return {**os.environ, **self.config.env, "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir)}

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.config.run_dir / "logs" / f"{name}.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            argv,
            env=self._env(),
            cwd=settings.BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()  # the child holds its own descriptor
        self.procs[name] = proc
        return proc

    def start_gateway(self, index: int) -> None:
        py = sys.executable
        self._spawn(
            f"gateway-{index}",
            [
                py,
                "-m",
                "uvicorn",
                GATEWAY_APP,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.config.gateway_ports[index]),
                "--workers",
                str(self.config.workers_per_gateway),
                "--timeout-graceful-shutdown",
                str(int(self.config.drain_timeout_s)),
                "--log-level",
                "warning",
                "--no-access-log",
            ],
        )

    def _start_celery(self) -> None:
        py = sys.executable
        run = self.config.run_dir
        self._spawn(
            "worker",
            [
                py,
                "-m",
                "celery",
                "-A",
                "uberllm",
                "worker",
                "--loglevel",
                "warning",
                "--concurrency",
                "2",
                "-n",
                f"{run.name}@%h",
            ],
        )
        self._spawn(
            "beat",
            [
                py,
                "-m",
                "celery",
                "-A",
                "uberllm",
                "beat",
                "--loglevel",
                "warning",
                "--schedule",
                str(run / "celerybeat-schedule"),
            ],
        )

    def _render_nginx(self) -> Path:
        servers = [f"127.0.0.1:{self.config.gateway_ports[i]}" for i in self.in_balancer]
        path = self.nginx_prefix / "nginx.conf"
        path.write_text(render_nginx_config(f"127.0.0.1:{self.config.lb_port}", servers))
        return path

    def _nginx_argv(self, *extra: str) -> list[str]:
        return [self.config.nginx, "-p", f"{self.nginx_prefix}/", "-c", "nginx.conf", *extra]

    def _start_nginx(self) -> None:
        for sub in ("logs", "tmp"):
            (self.nginx_prefix / sub).mkdir(parents=True, exist_ok=True)
        self._render_nginx()
        check = subprocess.run(self._nginx_argv("-t"), capture_output=True, text=True)
        if check.returncode != 0:
            raise FleetError(f"nginx config invalid: {check.stderr}")
        self._spawn("nginx", self._nginx_argv("-g", "daemon off;"))

    def set_balanced(self, indexes: list[int]) -> None:
        """Route new requests to these instances only (nginx reloads gracefully: requests
        in flight through the others continue)."""
        self.in_balancer = sorted(indexes)
        self._render_nginx()
        subprocess.run(self._nginx_argv("-s", "reload"), check=True, capture_output=True)
        time.sleep(0.3)  # the new nginx workers take over within a few ms

    def start(self) -> Fleet:
        run = self.config.run_dir
        shutil.rmtree(run, ignore_errors=True)
        for folder in (run / "logs", self.metrics_dir, self.nginx_prefix):
            folder.mkdir(parents=True)
        if self.config.emulator_profiles:
            self._spawn(
                "emulator",
                [
                    sys.executable,
                    "-m",
                    "lab.emulator",
                    "--profiles",
                    self.config.emulator_profiles,
                    "--port",
                    str(self.config.emulator_port),
                ],
            )
        for index in range(len(self.config.gateway_ports)):
            self.start_gateway(index)
        if self.config.celery:
            self._start_celery()
        self._start_nginx()
        try:
            self.wait_ready()
        except FleetError:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Every instance answers /readyz 200 with its event listener subscribed, and
        the load balancer answers."""
        for index in range(len(self.config.gateway_ports)):
            self.wait_gateway_ready(index, timeout)
        self._wait(
            lambda: httpx.get(f"{self.lb_url}/healthz").status_code == 200,
            timeout,
            "the load balancer did not answer",
        )

    def wait_gateway_ready(self, index: int, timeout: float = 60.0) -> None:
        def ready() -> bool:
            response = httpx.get(f"{self.gateway_url(index)}/readyz", timeout=5)
            body = response.json()
            return response.status_code == 200 and body["checks"]["events"]["detail"] in (
                "subscribed",
                "in-process (no Redis)",
            )

        self._wait(ready, timeout, f"gateway {index} not ready")

    def _wait(self, condition, timeout: float, message: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [name for name, proc in self.procs.items() if proc.poll() is not None]
            if dead:
                raise FleetError(f"{message}: {', '.join(dead)} exited (see {self.logs()})")
            try:
                if condition():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise FleetError(f"{message} within {timeout:.0f} s (see {self.logs()})")

    def logs(self) -> Path:
        return self.config.run_dir / "logs"

    def signal_gateway(self, index: int, signum: int) -> subprocess.Popen:
        proc = self.procs[f"gateway-{index}"]
        os.killpg(proc.pid, signum)
        return proc

    def kill_gateway(self, index: int) -> None:
        """SIGKILL the instance (master and workers): a crash, nothing drains."""
        proc = self.signal_gateway(index, signal.SIGKILL)
        proc.wait(10)

    def restart_gateway(self, index: int) -> float:
        """A rolling restart of one instance: out of the balancer, SIGTERM (uvicorn
        stops accepting, lets requests in flight finish up to the drain timeout, then
        the lifespan waits for their ledger writes), start again, wait until ready, back
        into the balancer. Returns the seconds the old instance took to exit."""
        self.set_balanced([i for i in self.in_balancer if i != index])
        started = time.monotonic()
        proc = self.procs[f"gateway-{index}"]
        proc.send_signal(signal.SIGTERM)  # the master forwards it to its workers
        proc.wait(self.config.drain_timeout_s + 30)
        drained_s = time.monotonic() - started
        self.start_gateway(index)
        self.wait_gateway_ready(index)
        self.set_balanced([*self.in_balancer, index])
        return drained_s

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(self.config.drain_timeout_s + 10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        self.procs.clear()

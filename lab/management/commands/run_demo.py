"""``manage.py run_demo``: seed the demo and run the whole stack until Ctrl-C.

Starts the emulated providers (``--emulator-port``, 8100), the gateway under uvicorn
(``--port``, 8000), and, when the project has periodic tasks, a Celery worker and beat.
Both ports are checked first: a busy one stops the command with a message and a
non-zero exit, before anything is seeded or printed. Children are stopped together on
exit. The demo sets a metrics scraper token (``UBERLLM_METRICS_TOKEN``, kept in
``var/``) and the banner says how to scrape ``/metrics`` with it.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from billing.management.commands.seed_demo import seed_demo, summary_lines
from common.config import set_knob

EMULATOR_PROFILES = "providers/fixtures/emulator_demo.json"
DEMO_PASSWORD, OPERATOR_PASSWORD = "demo-password", "operator-password"
HOST = "127.0.0.1"  # uvicorn's and the emulator's default bind address


def _gateway_workers() -> int:
    # Without Redis the shared routing state is per process: one gateway process.
    return max(2, os.cpu_count() or 1) if settings.REDIS_URL else 1


def metrics_env() -> dict[str, str]:
    """A fresh Prometheus multiprocess folder for this run (stale files of a previous
    run would otherwise be summed in), shared by the gateway workers and Celery."""
    folder = settings.VAR_DIR / "prometheus" / "demo"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return {"PROMETHEUS_MULTIPROC_DIR": str(folder)}


def metrics_token(var_dir: Path | None = None) -> str:
    """The demo's scraper token: ``UBERLLM_METRICS_TOKEN`` if set, else one kept in
    ``var/demo_metrics_token.txt`` (created once, git-ignored)."""
    token = os.environ.get("UBERLLM_METRICS_TOKEN", "")
    if token:
        return token
    path = Path(var_dir or settings.VAR_DIR) / "demo_metrics_token.txt"
    if path.exists() and path.read_text().strip():
        return path.read_text().strip()
    token = secrets.token_urlsafe(24)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


def port_problem(port: int, host: str = HOST) -> str:
    """Why ``port`` cannot be served on ``host`` ("" if it can): bound as uvicorn binds
    (``SO_REUSEADDR``, so a port in TIME_WAIT is free, one with a listener is not)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} is already in use on {host}"
            return f"port {port} cannot be used on {host}: {exc.strerror or exc}"
    return ""


def check_ports(*, port: int, emulator_port: int) -> None:
    """Raise CommandError (exit 1, nothing seeded or printed) if a port is unusable."""
    if port == emulator_port:
        raise CommandError(f"--port and --emulator-port are both {port}: pick two ports.")
    for flag, make_var, number in (
        ("--port", "PORT", port),
        ("--emulator-port", "EMULATOR_PORT", emulator_port),
    ):
        problem = port_problem(number)
        if problem:
            raise CommandError(
                f"{problem} ({flag}). Stop what listens there (e.g. a previous "
                f"`make run`), or choose another: `make run {make_var}=<port>` "
                f"(manage.py run_demo {flag} <port>)."
            )


def scrape_line(base_url: str, token: str) -> str:
    return f'curl -H "Authorization: Bearer {token}" {base_url}/metrics'


class Command(BaseCommand):
    help = "Seed the demo and start emulator + gateway (+ Celery worker and beat)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--emulator-port", type=int, default=8100)
        parser.add_argument("--time-scale", type=float, default=1.0)
        parser.add_argument("--no-celery", action="store_true")

    def _spawn(self, name: str, argv: list[str], env: dict, log: str = "") -> subprocess.Popen:
        self.stdout.write(self.style.HTTP_INFO(f"starting {name}"))
        # Celery's banners and start-up warnings would bury the summary: its output goes
        # to var/<log> (errors included), the emulator's and gateway's stay here.
        output = None
        if log:
            output = open(settings.VAR_DIR / log, "ab")  # noqa: SIM115 (the child writes it)
        return subprocess.Popen(argv, env=env, cwd=settings.BASE_DIR, stdout=output, stderr=output)

    def _celery(self, role: str, extra: list[str], env: dict) -> subprocess.Popen:
        argv = [sys.executable, "-m", "celery", "-A", "uberllm", "--quiet", role]
        argv += ["--loglevel", "warning", *extra]
        log = f"celery-{role}.log"
        return self._spawn(f"celery {role} (output in var/{log})", argv, env, log=log)

    def _processes(self, options: dict, env: dict) -> list[subprocess.Popen]:
        py = sys.executable
        emulator = [py, "-m", "lab.emulator", "--profiles", EMULATOR_PROFILES]
        emulator += ["--port", str(options["emulator_port"])]
        emulator += ["--time-scale", str(options["time_scale"])]
        gateway = [py, "-m", "uvicorn", "uberllm.asgi:application", "--host", HOST]
        gateway += ["--port", str(options["port"]), "--workers", str(_gateway_workers())]
        gateway += ["--log-level", "warning", "--no-access-log"]
        procs = [self._spawn("emulator", emulator, env), self._spawn("gateway", gateway, env)]
        if not options["no_celery"] and settings.CELERY_BEAT_SCHEDULE:
            procs.append(self._celery("worker", ["--concurrency", "2"], env))
            schedule = str(settings.VAR_DIR / "celerybeat-schedule")
            procs.append(self._celery("beat", ["--schedule", schedule], env))
        return procs

    def _banner(self, *, base_url: str, key: str, token: str, up: bool) -> None:
        lines = summary_lines(
            base_url=base_url, password=DEMO_PASSWORD, operator_password=OPERATOR_PASSWORD, key=key
        )
        rule = "=" * 78
        title = "UberLLM is up." if up else "UberLLM started (the gateway is not answering yet)."
        self.stdout.write("\n" + rule + "\n" + self.style.SUCCESS(title) + "\n")
        self.stdout.write("\n".join(lines[:-1]))
        self.stdout.write(f"  Metrics (Prometheus) {scrape_line(base_url, token)}")
        self.stdout.write(self.style.WARNING(lines[-1]))  # the key, last and visible
        self.stdout.write(rule + "\nCtrl-C stops everything.")

    def handle(self, *args, **options) -> None:
        check_ports(port=options["port"], emulator_port=options["emulator_port"])
        os.environ["UBERLLM_ALLOW_PRIVATE_UPSTREAMS"] = "true"
        set_knob("ALLOW_PRIVATE_UPSTREAMS", True)
        emulator_url = f"http://{HOST}:{options['emulator_port']}"
        base_url = f"http://{HOST}:{options['port']}"
        key = seed_demo(
            emulator_url=emulator_url, password=DEMO_PASSWORD, operator_password=OPERATOR_PASSWORD
        )
        token = metrics_token()
        # SIGTERM (e.g. from `timeout` or a process manager) stops the children too.
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        env = {**os.environ, **metrics_env(), "UBERLLM_METRICS_TOKEN": token}
        procs = self._processes(options, env)
        try:
            up = _wait_listening(options["port"], procs)
            self._banner(base_url=base_url, key=key, token=token, up=up)
            while all(p.poll() is None for p in procs):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            _stop(procs)


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_listening(port: int, procs: list[subprocess.Popen], timeout_s: float = 30) -> bool:
    """Wait until the gateway accepts connections (so the summary is printed last); a
    child that exits first (a port taken meanwhile, a crash) is a CommandError."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            raise CommandError(
                f"`{' '.join(dead[0].args[1:3])}` exited with code {dead[0].returncode} "
                "before the gateway answered (see its output above)."
            )
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False

"""``manage.py run_demo``: seed the demo and run the whole stack until Ctrl-C.

Starts the emulated providers (port 8100), the gateway under uvicorn (port 8000), and,
when the project has periodic tasks, a Celery worker and beat. Children are stopped
together on exit.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from billing.management.commands.seed_demo import seed_demo, summary_lines
from common.config import set_knob

EMULATOR_PROFILES = "providers/fixtures/emulator_demo.json"
DEMO_PASSWORD, OPERATOR_PASSWORD = "demo-password", "operator-password"


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


class Command(BaseCommand):
    help = "Seed the demo and start emulator + gateway (+ Celery worker and beat)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--emulator-port", type=int, default=8100)
        parser.add_argument("--time-scale", type=float, default=1.0)
        parser.add_argument("--no-celery", action="store_true")

    def _spawn(self, name: str, argv: list[str], env: dict, log: str = ""):
        self.stdout.write(self.style.HTTP_INFO(f"starting {name}"))
        # Celery's banners and start-up warnings would bury the summary: its output goes
        # to var/<log> (errors included), the emulator's and gateway's stay here.
        output = None
        if log:
            output = open(settings.VAR_DIR / log, "ab")  # noqa: SIM115 (the child writes it)
        return subprocess.Popen(argv, env=env, cwd=settings.BASE_DIR, stdout=output,
                                stderr=output)  # fmt: skip

    def _celery(self, role: str, extra: list[str], env: dict) -> subprocess.Popen:
        argv = [sys.executable, "-m", "celery", "-A", "uberllm", "--quiet", role,
                "--loglevel", "warning", *extra]  # fmt: skip
        log = f"celery-{role}.log"
        return self._spawn(f"celery {role} (output in var/{log})", argv, env, log=log)

    def _processes(self, options, env) -> list[subprocess.Popen]:
        py = sys.executable
        procs = [
            self._spawn("emulator", [py, "-m", "lab.emulator", "--profiles",
                        EMULATOR_PROFILES, "--port", str(options["emulator_port"]),
                        "--time-scale", str(options["time_scale"])], env),
            self._spawn("gateway", [py, "-m", "uvicorn", "uberllm.asgi:application",
                        "--port", str(options["port"]), "--workers", str(_gateway_workers()),
                        "--log-level", "warning", "--no-access-log"], env),
        ]  # fmt: skip
        if not options["no_celery"] and settings.CELERY_BEAT_SCHEDULE:
            procs.append(self._celery("worker", ["--concurrency", "2"], env))
            schedule = str(settings.VAR_DIR / "celerybeat-schedule")
            procs.append(self._celery("beat", ["--schedule", schedule], env))
        return procs

    def handle(self, *args, **options):
        os.environ["UBERLLM_ALLOW_PRIVATE_UPSTREAMS"] = "true"
        set_knob("ALLOW_PRIVATE_UPSTREAMS", True)
        emulator_url = f"http://127.0.0.1:{options['emulator_port']}"
        base_url = f"http://127.0.0.1:{options['port']}"
        key = seed_demo(emulator_url=emulator_url, password=DEMO_PASSWORD,
                        operator_password=OPERATOR_PASSWORD)  # fmt: skip
        # SIGTERM (e.g. from `timeout` or a process manager) stops the children too.
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        procs = self._processes(options, {**os.environ, **metrics_env()})
        up = _wait_listening(options["port"], procs)
        lines = summary_lines(base_url=base_url, password=DEMO_PASSWORD,
                              operator_password=OPERATOR_PASSWORD, key=key)  # fmt: skip
        rule = "=" * 78
        title = "UberLLM is up." if up else "UberLLM started (the gateway is not answering yet)."
        self.stdout.write("\n" + rule + "\n" + self.style.SUCCESS(title) + "\n")
        self.stdout.write("\n".join(lines[:-1]))
        self.stdout.write(self.style.WARNING(lines[-1]))  # the key, last and visible
        self.stdout.write(rule + "\nCtrl-C stops everything.")
        try:
            while all(p.poll() is None for p in procs):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _raise_keyboard_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _wait_listening(port: int, procs: list[subprocess.Popen], timeout_s: float = 30) -> bool:
    """Wait until the gateway accepts connections (so the summary is printed last)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and all(p.poll() is None for p in procs):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False

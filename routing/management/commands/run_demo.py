"""``manage.py run_demo``: seed the demo and run the whole stack until Ctrl-C.

Starts the emulated providers (port 8100), the gateway under uvicorn (port 8000), and,
when the project has periodic tasks, a Celery worker and beat. Children are stopped
together on exit.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

EMULATOR_PROFILES = "providers/fixtures/emulator_demo.json"


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

    def _spawn(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        self.stdout.write(f"starting {name}: {' '.join(argv)}")
        return subprocess.Popen(argv, env=env, cwd=settings.BASE_DIR)

    def _processes(self, options, env) -> list[subprocess.Popen]:
        py = sys.executable
        procs = [
            self._spawn("emulator", [py, "-m", "providers.emulator", "--profiles",
                        EMULATOR_PROFILES, "--port", str(options["emulator_port"]),
                        "--time-scale", str(options["time_scale"])], env),
            self._spawn("gateway", [py, "-m", "uvicorn", "uberllm.asgi:application",
                        "--port", str(options["port"]), "--workers", str(_gateway_workers()),
                        "--log-level", "warning", "--no-access-log"], env),
        ]  # fmt: skip
        if not options["no_celery"] and settings.CELERY_BEAT_SCHEDULE:
            procs.append(
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
                    ],
                    env,
                )
            )
            procs.append(
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
                        str(settings.VAR_DIR / "celerybeat-schedule"),
                    ],
                    env,
                )
            )
        return procs  # fmt: skip

    def handle(self, *args, **options):
        os.environ["UBERLLM_ALLOW_PRIVATE_UPSTREAMS"] = "true"
        settings.UBERLLM["ALLOW_PRIVATE_UPSTREAMS"] = True
        emulator_url = f"http://127.0.0.1:{options['emulator_port']}"
        call_command("seed_demo", emulator_url=emulator_url)
        procs = self._processes(options, {**os.environ, **metrics_env()})
        self.stdout.write(
            self.style.SUCCESS(
                f"\nUberLLM is up: API http://127.0.0.1:{options['port']}/api/v1 "
                f"(dashboard http://127.0.0.1:{options['port']}/). Ctrl-C stops everything."
            )
        )
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

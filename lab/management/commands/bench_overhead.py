"""``manage.py bench_overhead``: the gateway's overhead against calling the upstream directly.

Starts the emulator, the gateway (as ``make run`` does) and, when installed, the LiteLLM
proxy; runs paced and unpaced streams at several concurrencies through each and prints
ratios to the direct calls of the same run. See docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lab.benchmark.database import fresh_sqlite_file
from lab.benchmark.procs import cpu_model, cpu_reference_ms
from lab.benchmark.report import table
from lab.benchmark.run import MODES, SERVERS, Options, find_litellm, run

BENCH_VENV = ".venv-bench"
BENCH_REQUIREMENTS = "requirements-bench.txt"


def gateway_workers() -> int:
    """The worker count ``make run`` uses (lab/management/commands/run_demo.py)."""
    from lab.management.commands.run_demo import _gateway_workers

    return _gateway_workers()


class Command(BaseCommand):
    help = "Benchmark the gateway's added latency, CPU and memory against direct calls."

    def add_arguments(self, parser):
        parser.add_argument("--quick", action="store_true", help="short smoke run (~1 min)")
        parser.add_argument("--duration", type=float, help="measured seconds per cell (8)")
        parser.add_argument("--warmup", type=float, help="warm-up seconds per cell (1.5)")
        parser.add_argument("--concurrency", type=int, nargs="+", help="default: 1 32 128")
        parser.add_argument("--modes", nargs="+", choices=sorted(MODES), help="default: both")
        parser.add_argument("--workers", type=int, help="gateway processes (default: as make run)")
        parser.add_argument(
            "--app", default="uberllm.asgi:application", help="ASGI app to serve (experiments)"
        )
        parser.add_argument(
            "--server", choices=SERVERS, default="uvicorn", help="the gateway's ASGI server"
        )
        parser.add_argument(
            "--idle-seconds", type=float, help="quiet window for idle CPU (10; 0: skip)"
        )
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        parser.add_argument("--output", help="also write the JSON results to this file")
        litellm = parser.add_mutually_exclusive_group()
        litellm.add_argument(
            "--with-litellm",
            action="store_true",
            help=f"create {BENCH_VENV} with {BENCH_REQUIREMENTS} if needed, and run LiteLLM",
        )
        litellm.add_argument("--no-litellm", action="store_true", help="skip LiteLLM")

    def _log(self, message: str) -> None:
        self.stderr.write(message)

    def _install_litellm(self, base: Path) -> None:
        venv = base / BENCH_VENV
        if not (venv / "bin" / "python").exists():
            self._log(f"creating {venv} ...")
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        self._log(f"installing {BENCH_REQUIREMENTS} into {venv} (a few minutes the first time)")
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "-r", str(base / BENCH_REQUIREMENTS)],
            check=True,
        )

    def _litellm(self, options, base: Path) -> str | None:
        if options["no_litellm"]:
            return None
        if options["with_litellm"]:
            self._install_litellm(base)
        found = find_litellm(base)
        if found is None:
            self._log(
                "LiteLLM is not installed (not importable here, no .venv-bench): skipping it. "
                "`manage.py bench_overhead --with-litellm` installs it into .venv-bench."
            )
        return found

    def _database_url(self, base: Path) -> str | None:
        """Production settings' database when DATABASE_URL selects one, else a fresh
        SQLite file under var/bench/ (never the development database)."""
        path = fresh_sqlite_file(settings.DATABASES["default"], base, "bench")
        return None if path is None else f"sqlite:///{path}"

    def handle(self, *args, **options):
        base = Path(settings.BASE_DIR)
        quick = options["quick"]
        bench = Options(
            duration=options["duration"] or (3.0 if quick else 8.0),
            # At least one paced stream (~1 s) long, so no cold first request is measured.
            warmup=options["warmup"] or (1.2 if quick else 1.5),
            settle=0.5 if quick else 1.0,
            concurrency=options["concurrency"] or [1, 32, 128],
            modes=options["modes"] or list(MODES),
            workers=options["workers"] or gateway_workers(),
            app=options["app"],
            server=options["server"],
            idle_s=10.0 if options["idle_seconds"] is None else options["idle_seconds"],
            min_paced_streams=0 if quick else 30,
            litellm=self._litellm(options, base),
            database_url=self._database_url(base),
            redis=bool(settings.REDIS_URL),
            log=self._log,
        )
        database = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        stores = (
            f"database: {'sqlite (var/bench/bench.sqlite3)' if bench.database_url else database}"
            f", shared state: {'redis' if bench.redis else 'in-process'}"
            f", gateway: {bench.server} x {bench.workers} workers, cores: {os.cpu_count()}"
            f" ({cpu_model() or 'unknown CPU'}; reference loop {cpu_reference_ms():.0f} ms)"
        )
        default_app = bench.app == "uberllm.asgi:application"
        if not default_app or settings.SETTINGS_MODULE != "uberllm.settings":
            stores += f", app: {bench.app}, settings: {settings.SETTINGS_MODULE}"
        self._log(f"bench_overhead: {stores}")
        try:
            data = run(bench, base)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        data["setup"] = {
            "stores": stores,
            "duration_s": bench.duration,
            "warmup_s": bench.warmup,
            "workers": bench.workers,
            "server": bench.server,
            "litellm": bench.litellm,
        }
        encoded = json.dumps(data, indent=1)
        (base / "var" / "bench" / "last.json").write_text(encoded)
        if options["output"]:
            Path(options["output"]).write_text(encoded)
        if options["json"]:
            self.stdout.write(encoded)
        else:
            self.stdout.write(stores)
            self.stdout.write(table(data))

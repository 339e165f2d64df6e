"""``manage.py loadtest``: the gateway under load and faults, checked against issue 9.

Starts the emulator and a gateway (uvicorn, ``--workers N``) on free loopback ports
against the configured stores (PostgreSQL + Redis when DATABASE_URL / REDIS_URL are set;
otherwise a fresh SQLite file under var/loadtest/, never the development database) and
runs the scenarios of lab/benchmark/loadtest.py. See docs/loadtest.md.
"""

from __future__ import annotations

import resource
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from lab.benchmark.database import fresh_sqlite_file
from lab.benchmark.loadtest import SCENARIOS, Options, run
from lab.management.commands.bench_overhead import gateway_workers

# The options that are lab.benchmark.loadtest.Options fields of the same name, as given.
AS_GIVEN = ("streams", "concurrency", "cut_share", "burst", "rate", "duration", "fault_s", "seed")


class Command(BaseCommand):
    help = "Load and fault test of the gateway (cuts, burst, redis-outage, pg-pause)."

    def add_arguments(self, parser):
        parser.add_argument("scenarios", nargs="*", help=f"of {', '.join(SCENARIOS)} (all)")
        parser.add_argument(
            "--workers", type=int, help="gateway processes (as make run: 2+ with REDIS_URL, else 1)"
        )
        parser.add_argument("--streams", type=int, default=1500, help="cuts: requests (1500)")
        parser.add_argument("--concurrency", type=int, default=500, help="cuts: streams (500)")
        parser.add_argument("--cut-share", type=float, default=0.3, help="cuts: share cut (0.3)")
        parser.add_argument("--burst", type=int, default=1000, help="burst: requests (1000)")
        parser.add_argument("--rate", type=float, default=20.0, help="faults: requests/s (20)")
        parser.add_argument("--duration", type=float, default=30.0, help="faults: seconds (30)")
        parser.add_argument(
            "--fault-seconds", dest="fault_s", type=float, default=10.0, help="fault length (10)"
        )
        parser.add_argument("--seed", type=int, default=1)

    def _log(self, message: str) -> None:
        self.stderr.write(message)

    def _sqlite_file(self, base: Path) -> str | None:
        """With SQLite: a fresh file under var/loadtest/ for the gateway and this process."""
        path = fresh_sqlite_file(settings.DATABASES["default"], base, "loadtest")
        if path is None:
            return None
        connection = connections["default"]
        connection.close()
        connection.settings_dict["NAME"] = str(path)
        return f"sqlite:///{path}"

    def handle(self, *args, **options):
        # 1,000 simultaneous connections: this process holds one socket per request.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
        unknown = set(options["scenarios"]) - set(SCENARIOS)
        if unknown:
            raise CommandError(f"unknown scenario(s) {sorted(unknown)}; choose from {SCENARIOS}")
        base = Path(settings.BASE_DIR)
        database_url = self._sqlite_file(base)
        load = Options(
            scenarios=options["scenarios"] or list(SCENARIOS),
            workers=options["workers"] or gateway_workers(),
            log=self._log,
            **{name: options[name] for name in AS_GIVEN},
        )
        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        where = " (var/loadtest/loadtest.sqlite3)" if database_url else ""
        setup = (
            f"loadtest: database {engine}{where}"
            f", shared state {'redis' if settings.REDIS_URL else 'in-process'}"
            f", gateway workers {load.workers} (uvicorn)"
        )
        self._log(setup)
        try:
            reports = run(load, base, database_url)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write("\n\n".join([setup, *reports]))

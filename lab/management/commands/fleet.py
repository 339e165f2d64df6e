"""``manage.py fleet``: the demo on a fleet on one machine, until Ctrl-C.

Emulator (8100), two gateway instances (uvicorn, 2 workers each, ports 8001 and 8002)
behind nginx (8000), a Celery worker and one beat, on the PostgreSQL (DATABASE_URL)
and Redis (REDIS_URL) of the environment. See docs/operations.md, "Fleet".
"""

from __future__ import annotations

import os
import signal
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from common.config import set_knob
from lab.fleet import Fleet, FleetConfig

EMULATOR_PROFILES = "providers/fixtures/emulator_demo.json"


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Start emulator + 2 gateway instances + nginx + Celery worker and beat."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000, help="the load balancer's")
        parser.add_argument("--gateway-ports", default="8001,8002")
        parser.add_argument("--workers", type=int, default=2, help="uvicorn workers each")
        parser.add_argument("--emulator-port", type=int, default=8100)
        parser.add_argument("--drain-timeout", type=float, default=30.0)

    def handle(self, *args, **options):
        if not settings.REDIS_URL or settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
            raise CommandError(
                "a fleet shares PostgreSQL and Redis: set DATABASE_URL and REDIS_URL"
            )
        call_command("migrate", verbosity=0)
        set_knob("ALLOW_PRIVATE_UPSTREAMS", True)
        emulator_url = f"http://127.0.0.1:{options['emulator_port']}"
        call_command("seed_demo", emulator_url=emulator_url)
        # SIGTERM (a supervisor, `timeout`) stops the fleet like Ctrl-C: the processes run
        # in sessions of their own and would otherwise outlive this one.
        signal.signal(signal.SIGTERM, _interrupt)
        ports = [int(port) for port in options["gateway_ports"].split(",")]
        fleet = Fleet(
            FleetConfig(
                run_dir=settings.VAR_DIR / "fleet" / "demo",
                lb_port=options["port"],
                gateway_ports=ports,
                workers_per_gateway=options["workers"],
                drain_timeout_s=options["drain_timeout"],
                emulator_profiles=EMULATOR_PROFILES,
                emulator_port=options["emulator_port"],
                env={
                    "UBERLLM_ALLOW_PRIVATE_UPSTREAMS": "true",
                    "UBERLLM_METRICS_TOKEN": os.environ.get("UBERLLM_METRICS_TOKEN", ""),
                },
            )
        )
        try:
            fleet.start()
        except KeyboardInterrupt:
            fleet.stop()
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Fleet up: API {fleet.lb_url}/api/v1 through nginx; instances "
                f"{', '.join(fleet.gateway_url(i) for i in range(len(ports)))}; logs in "
                f"{fleet.logs()}. Ctrl-C stops everything."
            )
        )
        try:
            while all(proc.poll() is None for proc in fleet.procs.values()):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            fleet.stop()

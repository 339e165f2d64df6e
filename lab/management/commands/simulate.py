"""``manage.py simulate``: the market simulator (lab.simulator, docs/simulator.md).

A thin wrapper: the options, the run and the output are lab.simulator.cli's, so
``python -m lab.simulator`` behaves the same without Django.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from lab.simulator import cli
from lab.simulator.scenario import ScenarioError


class Command(BaseCommand):
    help = "Simulate routing strategies on a market scenario (virtual time, no network)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser) -> None:
        cli.add_arguments(parser)

    def handle(self, *args, **options) -> None:
        try:
            text, status = cli.run_with_status(options, err=sys.stderr)
        except (ScenarioError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(text, ending="")
        if status:  # --strict: smart dominated (--pareto) or an R8 target missed (--r8)
            raise CommandError("--strict: the check failed (see the report)", returncode=status)

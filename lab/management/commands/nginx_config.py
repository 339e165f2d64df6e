"""``manage.py nginx_config``: print deploy/nginx/uberllm.conf rendered for given hosts."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from lab.fleet import render_nginx_config


class Command(BaseCommand):
    help = "Print the nginx config for a load balancer in front of the given instances."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default="0.0.0.0:8080", help="address:port")
        parser.add_argument("--server", action="append", required=True, help="host:port")

    def handle(self, *args, **options):
        self.stdout.write(render_nginx_config(options["listen"], options["server"]), ending="")

#!/bin/sh
# The fleet on one machine (docs/operations.md, "Fleet"): emulator, two gateway
# instances (uvicorn, 2 workers each) behind nginx, Celery worker and beat.
# Needs PostgreSQL and Redis: DATABASE_URL=postgres://... REDIS_URL=redis://... deploy/fleet.sh
set -eu
cd "$(dirname "$0")/.."
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { echo "nginx missing: apt-get install -y nginx" >&2; exit 1; }
exec "${PYTHON:-.venv/bin/python}" manage.py fleet "$@"

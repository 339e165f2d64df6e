"""Operational endpoints: ``/healthz`` (liveness), ``/readyz`` (readiness) and
``/metrics`` (Prometheus, behind a bearer token). See docs/operations.md."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, JsonResponse

from common import metrics as metrics_module
from common.config import process_config

from . import health


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. No I/O, so a store outage restarts nothing."""
    return JsonResponse({"ok": True})


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: database, Redis (when configured), migrations and catalog; 200 when
    all pass, else 503, with each check's detail either way (no secret in them)."""
    ok, checks = health.readiness()
    return JsonResponse({"ok": ok, "checks": checks}, status=200 if ok else 503)


def _not_found() -> JsonResponse:
    body = {"error": {"message": "Not found.", "type": "not_found", "code": 404}}
    return JsonResponse(body, status=404)


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus exposition, for a scraper holding ``UBERLLM_METRICS_TOKEN``.

    Without a configured token the endpoint does not exist (404): metrics are never
    public by accident. A wrong or missing token is answered 401.
    """
    token = process_config().metrics_token
    if not token:
        return _not_found()
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        body = {
            "error": {
                "message": "A valid metrics token is required.",
                "type": "authentication_error",
                "code": 401,
            }
        }
        return JsonResponse(body, status=401, headers={"WWW-Authenticate": "Bearer"})
    return HttpResponse(metrics_module.render(), content_type=metrics_module.CONTENT_TYPE)

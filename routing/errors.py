"""OpenAI-shaped errors: ``{"error": {"message", "type", "code", "param"}}``."""

from __future__ import annotations

import orjson
from django.http import HttpResponse

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable",
    504: "timeout_error",
}


class GatewayError(Exception):
    """An error answered to the client in the OpenAI error shape."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or _TYPES.get(status, "error")
        self.param = param

    def payload(self) -> dict:
        return {
            "error": {
                "message": self.message,
                "type": _TYPES.get(self.status, "api_error"),
                "code": self.code,
                "param": self.param,
            }
        }

    def response(self) -> HttpResponse:
        return HttpResponse(
            orjson.dumps(self.payload()), status=self.status, content_type="application/json"
        )


def error_response(status: int, message: str, *, code: str | None = None) -> HttpResponse:
    return GatewayError(status, message, code=code).response()

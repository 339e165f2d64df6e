"""OpenAI-shaped errors: ``{"error": {"message", "type", "code", "param"}}``."""

from __future__ import annotations

import orjson
from django.http import HttpResponse

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    411: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    502: "upstream_error",
    503: "service_unavailable",
    504: "timeout_error",
}


OVERLOADED = "upstream_overloaded"  # the code when every attempt's provider said 503/529


class GatewayError(Exception):
    """An error answered to the client in the OpenAI error shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        retry_after_s: int | None = None,
        allow: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or _TYPES.get(status, "error")
        self.param = param
        self.retry_after_s = retry_after_s
        self.allow = allow

    def headers(self) -> list[tuple[bytes, bytes]]:
        """Retry-After (429/503) and Allow (405), when set."""
        headers = []
        if self.retry_after_s is not None:
            headers.append((b"retry-after", str(self.retry_after_s).encode()))
        if self.allow:
            headers.append((b"allow", self.allow.encode()))
        return headers

    def body(self) -> bytes:
        return orjson.dumps(self.payload())

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
        response = HttpResponse(self.body(), status=self.status, content_type="application/json")
        for name, value in self.headers():
            response[name.decode()] = value.decode()
        return response


def error_response(status: int, message: str, *, code: str | None = None) -> HttpResponse:
    return GatewayError(status, message, code=code).response()


READ_METHODS = ("GET", "HEAD")


def unless_read(request) -> HttpResponse | None:
    """The JSON 405 for a read route asked with another method, else None. HEAD is a GET
    whose body the server drops (uvicorn does), as Django's class views allow it."""
    if request.method in READ_METHODS:
        return None
    return GatewayError(405, "Use GET.", allow=", ".join(READ_METHODS)).response()

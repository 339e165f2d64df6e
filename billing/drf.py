"""DRF glue: API-key authentication and OpenAI-shaped error bodies."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.views import exception_handler

from .auth import authenticate


class ApiKeyAuthentication(BaseAuthentication):
    """``Authorization: Bearer ullm_...``; ``request.auth`` is the KeyPrincipal."""

    def authenticate(self, request):
        principal = async_to_sync(authenticate)(request.headers.get("Authorization"))
        if principal is None:
            raise exceptions.AuthenticationFailed("Missing, invalid or revoked API key.")
        if principal.expires_at is not None and principal.expires_at <= timezone.now():
            raise exceptions.AuthenticationFailed("This API key has expired.")
        return (None, principal)

    def authenticate_header(self, request) -> str:
        return "Bearer"


def _first_error(data) -> tuple[str, str | None, str]:
    """(message, param, code) of a DRF error body: a detail, a list, or field errors
    (as DRF's ErrorDetail or as Django's ``get_json_data()`` dicts)."""
    if isinstance(data, dict):
        if "detail" in data:
            detail = data["detail"]
            return str(detail), None, getattr(detail, "code", None) or "error"
        for field, errors in data.items():
            message, _, code = _first_error(errors)
            param = None if field == "__all__" else field
            return (f"{field}: {message}" if param else message), param, code
    if isinstance(data, list) and data:
        first = data[0]
        if isinstance(first, dict) and "message" in first:  # Django's get_json_data()
            return str(first["message"]), None, first.get("code") or "invalid"
        return _first_error(first)
    return str(data), None, getattr(data, "code", None) or "error"


# As the chat routes answer (routing/errors.py): a wrong method or media type is the
# client's request error, a throttle a rate limit; only what is left is api_error.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    406: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_exception_handler(exc, context):
    """Wrap DRF errors as ``{"error": {"message", "type", "code", "param"}}``, the first
    field error in plain words (never a Python repr)."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    message, param, code = _first_error(response.data)
    error_type = ERROR_TYPES.get(response.status_code, "api_error")
    response.data = {
        "error": {"message": message, "type": error_type, "code": code, "param": param}
    }
    return response

"""DRF glue: API-key authentication and OpenAI-shaped error bodies."""

from __future__ import annotations

from asgiref.sync import async_to_sync
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
        return (None, principal)

    def authenticate_header(self, request) -> str:
        return "Bearer"


def openai_exception_handler(exc, context):
    """Wrap DRF errors as ``{"error": {"message", "type", "code", "param"}}``."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data.get("detail") if isinstance(response.data, dict) else None
    message = str(detail) if detail else str(response.data)
    code = getattr(detail, "code", None) or "error"
    response.data = {"error": {"message": message, "type": code, "code": code, "param": None}}
    return response

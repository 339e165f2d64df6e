"""ASGI entry point: a Channels ProtocolTypeRouter in front of the apps.

HTTP goes through a Channels ``URLRouter``: the chat endpoint to the lean ASGI handler
of ``routing.gateway`` (no Django request, no middleware: it is the hot path, and it
is cancelled within milliseconds of a client disconnect), everything else to Django's
own ASGI handler with the full middleware chain.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uberllm.settings")

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.core.asgi import get_asgi_application
from django.urls import re_path

django_asgi_app = get_asgi_application()

from routing.gateway.asgi import chat_app  # noqa: E402 - needs the app registry
from routing.gateway.messages import messages_app  # noqa: E402 - Anthropic Messages API
from routing.gateway.responses import responses_app  # noqa: E402 - OpenAI Responses API

CHAT_PATH = "/api/v1/chat/completions"

http_routes = URLRouter(
    [
        re_path(r"^(?:api/)?v1/chat/completions/?$", chat_app),
        re_path(r"^(?:api/)?v1/messages(?:/count_tokens)?/?$", messages_app),
        re_path(r"^(?:api/)?v1/responses/?$", responses_app),
        re_path(r"", django_asgi_app),
    ]
)

from billing.routing import websocket_urlpatterns  # noqa: E402  (needs Django set up)
from common.cors import ApiCors  # noqa: E402
from uberllm.lifespan import lifespan  # noqa: E402

application = ProtocolTypeRouter(
    {
        # Startup: the change listener, tracing; shutdown: drain the ledger writes.
        "lifespan": lifespan,
        # CORS on the API's paths (common/cors.py): a browser page may call it with a key.
        "http": ApiCors(http_routes),
        # Live Activity updates (billing/consumers.py): session-authenticated, same origin.
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

"""ASGI entry point: a Channels ProtocolTypeRouter in front of Django.

HTTP goes to Django's own ASGI handler, so the chat endpoint is a Django async view
that is cancelled within milliseconds when the client disconnects (a Channels
AsyncHttpConsumer looping in handle() is not).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "uberllm.settings")

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

django_asgi_app = get_asgi_application()

application = ProtocolTypeRouter({"http": django_asgi_app})

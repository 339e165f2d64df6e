from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularJSONAPIView

from billing.apis import ActivityListApi, CreditsApi

from . import apis, key_views, model_views, openapi, views  # noqa: F401 - openapi registers extensions

app_name = "api"

urlpatterns = [
    # Public reads: a wrong method is a JSON 405 with Allow, not a CSRF 403.
    path("models", csrf_exempt(views.models_list), name="models"),
    path(
        "models/<path:slug>/endpoints",
        csrf_exempt(model_views.model_endpoints),
        name="model-endpoints",
    ),
    path("models/<path:slug>", csrf_exempt(model_views.model_detail), name="model"),
    path("key", csrf_exempt(key_views.current_key), name="key"),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("generation", apis.GenerationApi.as_view(), name="generation"),
    path("activity", ActivityListApi.as_view(), name="activity"),
    path("credits", CreditsApi.as_view(), name="credits"),
]

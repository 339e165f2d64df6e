from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.staticfiles.views import serve as serve_static
from django.http import FileResponse, HttpResponse
from django.urls import include, path, re_path
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt

from routing.errors import GatewayError
from routing.model_page_views import public_model_view, public_models_view
from routing.operator import operator_overview_view
from routing.views import api_not_found, api_server_error

from . import views as ops_views


def static_file(request, path: str) -> HttpResponse:
    """A static file from the finders, read whole (they are small): an async server
    would otherwise have to drain FileResponse's sync iterator in a thread."""
    response = serve_static(request, path, insecure=True)
    if isinstance(response, FileResponse):
        body = b"".join(response.streaming_content)
        response.close()
        plain = HttpResponse(body, content_type=response["Content-Type"])
        plain["Cache-Control"] = "public, max-age=3600"
        return plain
    return response


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("routing.urls")),
    path("v1/", include(("routing.urls", "api"), namespace="v1")),  # OpenAI's base URL
    # Every unknown API path answers JSON, whatever the method (no CSRF page: no cookies).
    re_path(r"^(?:api|v1)/", csrf_exempt(api_not_found)),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Password reset (Django's views; the e-mail goes through EMAIL_BACKEND: the console
    # in the demo, SMTP from DJANGO_EMAIL_URL in production).
    path("password_reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path(
        "password_reset/done/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("healthz", ops_views.healthz),
    path("readyz", ops_views.readyz),
    path("metrics", ops_views.metrics),
    # The few static files (admin CSS, Chart.js) served by Django itself, from the
    # finders: no collectstatic step, no sync-only middleware in the chain.
    re_path(r"^static/(?P<path>.+)$", static_file),
    path("operator/", operator_overview_view, name="operator"),
    # Public model pages (no login): providers, prices, TTFT by prompt size, uptime.
    path("models/", public_models_view, name="models"),
    path("models/<path:slug>", public_model_view, name="model-page"),
    path("", include("billing.urls")),
]


def handler404(request, exception=None):
    if request.path.startswith(("/api/", "/v1/")):
        return api_not_found(request, exception)
    return defaults.page_not_found(request, exception)


def handler500(request):
    if request.path.startswith(("/api/", "/v1/")):
        return api_server_error(request)
    return defaults.server_error(request)


def csrf_failure(request, reason=""):
    """``CSRF_FAILURE_VIEW``: a JSON 403 under the API (which authenticates by key, not by
    cookie), Django's page elsewhere."""
    if request.path.startswith(("/api/", "/v1/")):
        return GatewayError(403, "Forbidden (CSRF check failed).", code="forbidden").response()
    return csrf.csrf_failure(request, reason)

from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.activity_list_view, name="activity"),
    path("activity/<str:request_id>/", views.activity_detail_view, name="activity-detail"),
    path("keys/", views.api_keys_view, name="keys"),
    path("keys/<int:key_id>/revoke/", views.api_key_revoke_view, name="key-revoke"),
]

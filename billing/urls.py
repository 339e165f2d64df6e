from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.home_view, name="activity"),  # the operator overview for the operator
    path("activity.csv", views.activity_csv_view, name="activity-csv"),
    path(
        "activity/rejected/<int:rejected_id>/",
        views.rejected_detail_view,
        name="rejected-detail",
    ),
    path("activity/<str:request_id>/", views.activity_detail_view, name="activity-detail"),
    path("usage/", views.usage_view, name="usage"),
    path("usage.csv", views.usage_csv_view, name="usage-csv"),
    path("statement/", views.statement_view, name="statement"),
    path("statement.csv", views.statement_csv_view, name="statement-csv"),
    path("keys/", views.api_keys_view, name="keys"),
    path("keys/<int:key_id>/revoke/", views.api_key_revoke_view, name="key-revoke"),
    path("keys/<int:key_id>/limit/", views.api_key_limit_view, name="key-limit"),
    path("keys/<int:key_id>/settings/", views.api_key_settings_view, name="key-settings"),
    path("keys/organisation-limits/", views.organisation_limits_view, name="org-limits"),
    path("keys/body-logging/", views.organisation_body_logging_view, name="org-body-logging"),
    path("members/", views.members_view, name="members"),
    path("members/<int:membership_id>/role/", views.member_role_view, name="member-role"),
    path("members/<int:membership_id>/remove/", views.member_remove_view, name="member-remove"),
    path(
        "members/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke_view,
        name="invitation-revoke",
    ),
    path("invite/<str:token>/", views.invitation_accept_view, name="invitation-accept"),
]

"""Dashboard pages (server-rendered). Thin: resolve the organisation, validate the
input with a form, read through selectors, write through services. Every page is
scoped to the logged-in member's organisation."""

from .activity import (
    activity_csv_view,
    activity_detail_view,
    activity_list_view,
    rejected_detail_view,
)
from .common import organisation_required, owner_required
from .keys import (
    api_key_limit_view,
    api_key_revoke_view,
    api_key_settings_view,
    api_keys_view,
    organisation_body_logging_view,
    organisation_limits_view,
)
from .members import (
    invitation_accept_view,
    invitation_revoke_view,
    member_remove_view,
    member_role_view,
    members_view,
)
from .operator import home_view
from .statement import statement_csv_view, statement_view
from .usage import usage_csv_view, usage_view

__all__ = [
    "activity_csv_view",
    "activity_detail_view",
    "activity_list_view",
    "api_key_limit_view",
    "api_key_revoke_view",
    "api_key_settings_view",
    "api_keys_view",
    "home_view",
    "invitation_accept_view",
    "invitation_revoke_view",
    "member_remove_view",
    "member_role_view",
    "members_view",
    "organisation_body_logging_view",
    "organisation_limits_view",
    "organisation_required",
    "owner_required",
    "rejected_detail_view",
    "statement_csv_view",
    "statement_view",
    "usage_csv_view",
    "usage_view",
]

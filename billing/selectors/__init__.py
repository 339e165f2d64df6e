"""Reads for the dashboard, the API and the staff pages.

Tenancy is a gate, not a convention (billing/tenancy.py): every read of tenant data
goes through ``Model.objects.for_organisation(...)``, or it raises. The cross-tenant
reads are named ``unscoped_…`` (``staff``, and the invitation a link token names).

    common    UTC periods, the Activity filters, the savings sums
    activity  the Activity list of an organisation, rejections, CSV rows, cursor pages
    usage     usage of a queryset of rows: per day, model, provider, key; TTFT
    rolled    the same figures from the daily rollups and the recent rows
    spend     spend of an organisation or key; per-row spend columns
    credits   credits, all-time usage, the monthly statement
    keys      an organisation's API keys
    members   members, invitations, a signed-in user's organisation
    staff     the cross-tenant reads (``unscoped_…``)
"""

from .activity import (
    CALL_KIND,
    CSV_COLUMNS,
    REJECTED_CSV_COLUMNS,
    REJECTED_KIND,
    activity_csv_rows,
    activity_filter_choices,
    activity_get,
    activity_list,
    activity_page_after,
    activity_totals,
    call_body_get,
    generation_get,
    keyset_after,
    keyset_chunks,
    mixed_page_after,
    rejected_csv_rows,
    rejected_get,
    rejected_list,
    row_kind,
)
from .balance import api_key_usage, organisation_usage
from .common import PROMPT_BUCKETS, ActivityFilters, day_start, for_organisation, month_start
from .credits import (
    CreditSummary,
    Statement,
    credit_summary,
    credits_before,
    monthly_statement,
    organisation_usage_before,
)
from .keys import (
    api_key_choices,
    api_key_get,
    api_key_list,
    api_key_names,
    catalog_model_slugs,
)
from .members import (
    invitation_get,
    invitation_pending_list,
    membership_for_user,
    membership_get,
    membership_list,
    organisation_for_user,
    unscoped_invitation_by_token,
)
from .premium import SpeedPremium, speed_premium
from .rolled import (
    activity_row_count,
    filter_choices,
    percentile_of_counts,
    usage_by,
    usage_days,
    usage_summary,
    usage_totals,
    usage_ttft,
)
from .spend import api_key_month_spend, spend_alerts_recent, spend_since
from .staff import unscoped_organisation_spend, unscoped_spend_by_model_bucket
from .usage import (
    EMPTY_USAGE,
    percentile,
    ttft_by_bucket,
    usage_per_day,
    usage_per_key,
    usage_per_model,
    usage_per_provider,
)

__all__ = [
    "CALL_KIND",
    "CSV_COLUMNS",
    "EMPTY_USAGE",
    "PROMPT_BUCKETS",
    "REJECTED_CSV_COLUMNS",
    "REJECTED_KIND",
    "ActivityFilters",
    "CreditSummary",
    "SpeedPremium",
    "Statement",
    "activity_csv_rows",
    "activity_filter_choices",
    "activity_get",
    "activity_list",
    "activity_page_after",
    "activity_row_count",
    "activity_totals",
    "api_key_choices",
    "api_key_get",
    "api_key_list",
    "api_key_month_spend",
    "api_key_names",
    "api_key_usage",
    "call_body_get",
    "catalog_model_slugs",
    "credit_summary",
    "credits_before",
    "day_start",
    "filter_choices",
    "for_organisation",
    "generation_get",
    "invitation_get",
    "invitation_pending_list",
    "keyset_after",
    "keyset_chunks",
    "membership_for_user",
    "membership_get",
    "membership_list",
    "mixed_page_after",
    "month_start",
    "monthly_statement",
    "organisation_for_user",
    "organisation_usage",
    "organisation_usage_before",
    "percentile",
    "percentile_of_counts",
    "rejected_csv_rows",
    "rejected_get",
    "rejected_list",
    "row_kind",
    "speed_premium",
    "spend_alerts_recent",
    "spend_since",
    "ttft_by_bucket",
    "unscoped_invitation_by_token",
    "unscoped_organisation_spend",
    "unscoped_spend_by_model_bucket",
    "usage_by",
    "usage_days",
    "usage_per_day",
    "usage_per_key",
    "usage_per_model",
    "usage_per_provider",
    "usage_summary",
    "usage_totals",
    "usage_ttft",
]

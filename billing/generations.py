"""``GET /generation``'s record of one call: the row once it is final; before that, the
final figures of a call this process has just finished and not written yet (the ledger
writes in batches: up to ``LEDGER_FLUSH_INTERVAL_S`` later); otherwise the row as it is,
pending (in flight, or finished by another process whose batch is not written yet).

Above the selectors (which only read the database) and the ledger writer (which holds
the just-finished calls): neither has to import the other."""

from __future__ import annotations

from django.http import Http404

from .ledger import activity_preview
from .ledger_writer import just_finished
from .models import Activity
from .selectors import generation_get


def generation_record(*, organisation_id: int, request_id: str) -> Activity:
    """The call's record, scoped to ``organisation_id``; Http404 when neither the
    database nor this process knows the call."""
    activity = generation_get(organisation_id=organisation_id, request_id=request_id)
    if activity is not None and activity.status != Activity.Status.PENDING:
        return activity
    finished = just_finished.get(request_id)
    if finished is not None and finished[0].organisation_id == organisation_id:
        return activity_preview(*finished)
    if activity is None:
        raise Http404("No such generation.")
    return activity

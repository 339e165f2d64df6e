"""Ledger writes: one Activity row per request, one Attempt row per upstream attempt.

Both writes are idempotent: opening inserts only if the request id is new; finishing
updates only a still-pending row and inserts attempts with ignore_conflicts, so a
replayed finaliser changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from common.lean_sql import Row, insert_rows, new_row, select_rows, update_rows
from common.metrics import observe_ledger_orphan

from .limits import settle_abandoned
from .models import Activity, ApiKey, Attempt, Organisation
from .savings import fill_savings

logger = logging.getLogger(__name__)
LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(slots=True)
class AttemptResult:
    attempt_no: int
    endpoint_id: int | None
    provider_slug: str
    reason: str
    outcome: str
    http_status: int | None = None
    error_message: str = ""
    ttft_ms: int | None = None
    duration_ms: int | None = None
    hedge_leg: bool = False
    platform_cost_usd: Decimal = Decimal(0)
    # A refusal's Retry-After (or its exhausted rate limit's reset), seconds: when the
    # provider said to try the endpoint again (providers.refusals; not stored).
    retry_after_s: float | None = None


@dataclass(slots=True)
class CallResult:
    """The outcome of one chat request, as the gateway saw it."""

    request_id: str
    status: str
    http_status: int
    endpoint_id: int | None = None
    provider_slug: str = ""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    usage_estimated: bool = False
    prices: dict = field(default_factory=dict)
    ttft_ms: int | None = None
    total_ms: int | None = None
    routing_strategy: str = ""
    routing_reason: str = ""
    prompt_bucket: str = ""
    error_message: str = ""
    hedged: bool = False
    hedge_cost_usd: Decimal = Decimal(0)
    attempts: list[AttemptResult] = field(default_factory=list)
    model_slug: str = ""  # set: the model served (a ``models`` fallback), else the row's


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A call still in flight: its row is alive (``heartbeat_at``) and, once a stream is
    served, what was delivered so far (the provider charges for it even if the process
    dies before the call ends). Applied to a pending row only."""

    request_id: str
    at: datetime
    endpoint_id: int | None = None
    provider_slug: str = ""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    prices: dict = field(default_factory=dict)
    usage_estimated: bool = True  # False once the provider reported the usage


@dataclass(frozen=True, slots=True)
class OpenRow:
    """What the pending row of an accepted request says."""

    request_id: str
    organisation_id: int
    api_key_id: int | None  # None only when the key was deleted mid-call
    model_slug: str
    stream: bool
    created_at: datetime


# The ledger writer's items: an opening (None), an outcome, or a checkpoint.
LedgerItem = tuple[OpenRow, CallResult | Checkpoint | None]
# An opening's columns beside its request id (the fields of OpenRow).
OPEN_FIELDS = ("organisation_id", "api_key_id", "model_slug", "stream", "created_at")
# What a call has used so far, as a CallResult and a Checkpoint both say it.
USAGE_FIELDS = (
    "endpoint_id",
    "provider_slug",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "cost_usd",
    "prices",
    "usage_estimated",
)


def _opening(row: OpenRow) -> dict:
    """``row``'s columns but its request id, by name."""
    return {name: getattr(row, name) for name in OPEN_FIELDS}


def activity_open(
    *,
    request_id: str,
    organisation_id: int,
    api_key_id: int,
    model_slug: str,
    stream: bool,
    created_at: datetime,
) -> None:
    """Insert the pending row for an accepted request (no-op if it exists)."""
    row = OpenRow(request_id, organisation_id, api_key_id, model_slug, stream, created_at)
    Activity.unscoped_objects.get_or_create(request_id=request_id, defaults=_opening(row))
    _touch_key(api_key_id, created_at)


def _attempt_rows(
    activity: Activity | Row, attempts: list[AttemptResult], make=Attempt
) -> list[Attempt | Row]:
    """The Attempt rows of a call: model instances, or with ``make=partial(new_row,
    Attempt)`` lean rows for ``insert_rows``."""
    return [
        make(
            activity_id=activity.id,
            attempt_no=a.attempt_no,
            endpoint_id=a.endpoint_id,
            provider_slug=a.provider_slug,
            outcome=a.outcome,
            http_status=a.http_status,
            error_message=a.error_message[:2000],
            reason=a.reason[:128],
            ttft_ms=a.ttft_ms,
            duration_ms=a.duration_ms,
            hedge_leg=a.hedge_leg,
            platform_cost_usd=a.platform_cost_usd,
        )
        for a in attempts
    ]


@transaction.atomic
def activity_finish(result: CallResult, row: OpenRow | None = None) -> bool:
    """Finish a pending row with the call's outcome; with ``row``, insert the finished
    row if none exists yet (one INSERT instead of an insert and an update). Returns
    False if the row was already finished (a replayed finaliser changes nothing)."""
    activity = (
        Activity.unscoped_objects.select_for_update().filter(request_id=result.request_id).first()
    )
    if activity is None:
        if row is None:
            return False
        activity = _new_activity(row)
    elif activity.status != Activity.Status.PENDING:
        return False
    _apply_result(activity, result)
    activity.save()
    Attempt.objects.bulk_create(_attempt_rows(activity, result.attempts), ignore_conflicts=True)
    # Live dashboards hear of it from the ledger writer, one message per organisation
    # and batch (billing/ledger_writer.py), not one channel-layer call per row.
    return True


def _finish_pending(
    results: dict[str, CallResult],
) -> tuple[list[tuple[Activity, CallResult]], list[str]]:
    """Finish the still-pending rows of ``results`` (locked, one UPDATE); rows already
    finished are left alone. Returns (rows finished, request ids with no row)."""
    if not results:
        return [], []
    rows = select_rows(Activity, "request_id", list(results), FINISH_READS, for_update=True)
    pending = [row for row in rows if row.status == Activity.Status.PENDING]
    for activity in pending:
        _apply_result(activity, results[activity.request_id])
    if pending:
        update_rows(Activity, pending, FINISH_FIELDS)
    found = {row.request_id for row in rows}
    missing = [rid for rid in results if rid not in found]
    return [(activity, results[activity.request_id]) for activity in pending], missing


# What finishing reads of a pending row: its status and model, and the FINISH_FIELDS
# that ``_apply_result`` may leave as they are (a call without usage has no savings).
FINISH_READS = (
    "request_id",
    "status",
    "model_slug",
    "reference_prices",
    "list_cost_usd",
    "cheapest_cost_usd",
)
RESULT_FIELDS = (
    "status",
    "http_status",
    *USAGE_FIELDS,
    "ttft_ms",
    "total_ms",
    "routing_strategy",
    "routing_reason",
    "prompt_bucket",
    "hedged",
    "hedge_cost_usd",
)
FINISH_FIELDS = (
    *RESULT_FIELDS,
    "model_slug",
    "error_message",
    "attempt_count",
    "finished_at",
    "reference_prices",
    "list_cost_usd",
    "cheapest_cost_usd",
)


def activity_preview(row: OpenRow, result: CallResult) -> Activity:
    """The finished row as ``activity_finish`` will write it, unsaved, with its attempts
    as ``attempt_rows``: what ``GET /generation`` answers for a call this process has
    finished and not written yet (billing.generations.generation_record)."""
    activity = _new_activity(row, touch=False)
    _apply_result(activity, result)
    activity.attempt_rows = _attempt_rows(activity, result.attempts)
    return activity


def _apply_result(activity: Activity, result: CallResult) -> None:
    for name in RESULT_FIELDS:
        setattr(activity, name, getattr(result, name))
    if result.model_slug:
        activity.model_slug = result.model_slug
    activity.error_message = result.error_message[:2000]
    activity.attempt_count = len(result.attempts)
    activity.finished_at = timezone.now()
    fill_savings(activity)  # list and cheapest-route prices in force now (docs/savings.md)


def _new_activity(row: OpenRow, *, touch: bool = True, make=Activity) -> Activity | Row:
    if touch:
        _touch_key(row.api_key_id, row.created_at)
    return make(request_id=row.request_id, **_opening(row))


_touched: dict[int, datetime] = {}  # api_key_id -> last_used_at this process wrote


def _touch_key(api_key_id: int | None, used_at: datetime) -> None:
    """At most one write a minute per key: a busy key's row is not rewritten per call
    (and this process does not even ask while its own last write is that recent)."""
    if api_key_id is None:
        return
    last = _touched.get(api_key_id)
    if last is not None and used_at - last < LAST_USED_RESOLUTION:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=used_at - LAST_USED_RESOLUTION)
    ApiKey.unscoped_objects.filter(stale, id=api_key_id).update(last_used_at=used_at)
    if len(_touched) >= 100_000:
        _touched.clear()
    _touched[api_key_id] = used_at


def ledger_write(items: list[LedgerItem]) -> None:
    """Apply a batch of ledger writes in order: open a row, or finish it (inserting it
    finished when its opening is in the same batch). Every step is idempotent, so a
    batch retried after a failure (the database went away half-way) writes each row
    exactly once.

    Fast path: the whole batch in one transaction, new rows in one multi-row INSERT and
    their attempts in another (a commit and two statements per batch instead of four
    statements and a commit per call). Any error falls back to the row-by-row path.
    Checkpoints of calls in flight are applied last, to rows still pending."""
    checkpoints = [item for _, item in items if isinstance(item, Checkpoint)]
    if checkpoints:
        items = [(row, item) for row, item in items if not isinstance(item, Checkpoint)]
    try:
        with transaction.atomic():
            _write_batch(items)
    except DatabaseError:
        if not connection.is_usable():
            raise  # the database is away: the writer retries the whole batch later
        for row, result in items:  # a row the fast path cannot write (already exists...)
            _write_one_or_orphan(row, result, items)
    if checkpoints:
        _apply_checkpoints_safely(checkpoints)


def _apply_checkpoints_safely(checkpoints: list[Checkpoint]) -> None:
    """Heartbeats are best effort: one naming an endpoint deleted mid-call is applied
    without its numbers (the call's end, or the reconciler, closes the row) instead of
    failing the batch, which the writer would retry for ever."""
    try:
        with transaction.atomic():
            apply_checkpoints(checkpoints)
    except IntegrityError:
        alive = _existing_endpoint_ids({c.endpoint_id for c in checkpoints})
        apply_checkpoints(
            [
                c
                if c.endpoint_id is None or c.endpoint_id in alive
                else Checkpoint(c.request_id, c.at)
                for c in checkpoints
            ]
        )


def apply_checkpoints(checkpoints: list[Checkpoint]) -> None:
    """Mark the rows of calls in flight alive: one UPDATE for those not served yet, one
    for those that have delivered tokens (each with its checkpoint's numbers; not one
    statement per call: a heartbeat of 2,000 long streams was 2,000 UPDATEs). Finished
    rows are never touched."""
    if not checkpoints:
        return
    pending = {"status": Activity.Status.PENDING}
    # Through ``update_rows``, not ``filter(request_id__in=...)``: an IN list of each
    # batch's own length is a new statement text every time (``lean_sql.padded_count``).
    beat_at = max(c.at for c in checkpoints)
    unserved = dict.fromkeys(c.request_id for c in checkpoints if c.endpoint_id is None)
    alive = [_alive_row(request_id, beat_at) for request_id in unserved]
    update_rows(Activity, alive, ("heartbeat_at",), key="request_id", only_if=pending)
    # The newest checkpoint of a call (a backlog may hold two beats of it): one source
    # row per target row, as the UPDATE ... FROM needs.
    newest = {c.request_id: c for c in checkpoints if c.endpoint_id is not None}
    served = [_checkpoint_row(c) for c in newest.values()]
    update_rows(Activity, served, CHECKPOINT_FIELDS, key="request_id", only_if=pending)


CHECKPOINT_FIELDS = ("heartbeat_at", *USAGE_FIELDS)


def _alive_row(request_id: str, at) -> Row:
    row = Row()
    row.__dict__.update(request_id=request_id, heartbeat_at=at)
    return row


def _checkpoint_row(c: Checkpoint) -> Row:
    row = Row()
    row.__dict__.update(request_id=c.request_id, heartbeat_at=c.at)
    row.__dict__.update({name: getattr(c, name) for name in USAGE_FIELDS})
    return row


def _write_one(row: OpenRow, result: CallResult | None, items) -> None:
    if result is not None:
        activity_finish(result, row)
    elif not any(r.request_id == row.request_id and res for r, res in items):
        activity_open(request_id=row.request_id, **_opening(row))


def _write_one_or_orphan(row: OpenRow, result: CallResult | None, items) -> None:
    """Write one row; if a parent it names was deleted while the call was in flight (an
    organisation, an API key, an endpoint), write it without the gone key or endpoint,
    or drop it when its organisation is gone (nobody to bill or show it to). Either way
    the batch is done: retrying a row whose parent is gone would fail for ever and hold
    every later write of the process behind it."""
    try:
        with transaction.atomic():
            _write_one(row, result, items)
        return
    except IntegrityError:
        pass
    if not Organisation.objects.filter(id=row.organisation_id).exists():
        logger.warning("ledger: %s dropped: its organisation was deleted", row.request_id)
        observe_ledger_orphan("dropped")
        return
    row, result = _without_gone_links(row, result)
    try:
        with transaction.atomic():
            _write_one(row, result, items)
        observe_ledger_orphan("unlinked")
    except IntegrityError as exc:
        logger.warning("ledger: %s dropped: %s", row.request_id, exc)
        observe_ledger_orphan("dropped")


def _existing_endpoint_ids(named: set[int | None]) -> set[int]:
    """Which of ``named`` are endpoints that still exist."""
    endpoint_model = Activity._meta.get_field("endpoint").related_model
    ids = [endpoint_id for endpoint_id in named if endpoint_id is not None]
    return set(endpoint_model.objects.filter(id__in=ids).values_list("id", flat=True))


def _without_gone_links(
    row: OpenRow, result: CallResult | None
) -> tuple[OpenRow, CallResult | None]:
    """``row`` and ``result`` with the API key and endpoints that no longer exist unset
    (the columns are nullable: the call is still billed and shown)."""
    if (
        row.api_key_id is not None
        and not ApiKey.unscoped_objects.filter(id=row.api_key_id).exists()
    ):
        row = replace(row, api_key_id=None)
    if result is None:
        return row, None
    alive = _existing_endpoint_ids({result.endpoint_id} | {a.endpoint_id for a in result.attempts})

    def kept(endpoint_id: int | None) -> int | None:
        return endpoint_id if endpoint_id in alive else None

    attempts = [replace(a, endpoint_id=kept(a.endpoint_id)) for a in result.attempts]
    return row, replace(result, endpoint_id=kept(result.endpoint_id), attempts=attempts)


# The batch path's rows: plain ``Row``s for insert_rows, not model instances.
_LEAN_ACTIVITY = partial(new_row, Activity)
_LEAN_ATTEMPT = partial(new_row, Attempt)


def _write_batch(items: list[LedgerItem]) -> None:
    finished = {row.request_id: (row, result) for row, result in items if result is not None}
    opened_here = {row.request_id for row, result in items if result is None}
    new_rows: list[tuple[Activity | Row, CallResult | None]] = [
        (
            _new_activity(row, touch=False, make=_LEAN_ACTIVITY),
            finished.get(row.request_id, (None, None))[1],
        )
        for row, result in items
        if result is None
    ]
    # Calls whose row is not in this batch: finish their pending row (one UPDATE for
    # all), or insert them whole when no row was ever written (a short call's opening
    # is deferred and dropped once it has ended: billing/ledger_writer.py).
    elsewhere = {rid: pair for rid, pair in finished.items() if rid not in opened_here}
    done, missing = _finish_pending({rid: result for rid, (_, result) in elsewhere.items()})
    new_rows += [
        (_new_activity(elsewhere[rid][0], touch=False, make=_LEAN_ACTIVITY), elsewhere[rid][1])
        for rid in missing
    ]
    for activity, result in new_rows:
        if result is not None:
            _apply_result(activity, result)
    insert_rows(Activity, [activity for activity, _ in new_rows])
    done += [(activity, result) for activity, result in new_rows if result is not None]
    attempts = [
        a
        for activity, result in done
        for a in _attempt_rows(activity, result.attempts, _LEAN_ATTEMPT)
    ]
    insert_rows(Attempt, attempts, returning=False)
    latest: dict[int, datetime] = {}
    for row, _ in items:
        latest[row.api_key_id] = max(row.created_at, latest.get(row.api_key_id, row.created_at))
    for api_key_id, used_at in latest.items():
        _touch_key(api_key_id, used_at)


UNFINISHED = "unfinished: the gateway process stopped before the call ended"
RECONCILE_BATCH = 500


def activity_reconcile(*, older_than_s: float) -> int:
    """Finish rows a crashed or killed gateway process left pending: no checkpoint (or,
    never checkpointed, no opening) for ``older_than_s``. A row whose last checkpoint
    recorded delivered tokens is billed for them at the prices it recorded (what the
    provider charged for; estimated unless the provider's usage had come); a row with
    none is closed at $0. The hard-limit reservations the dead process held for them
    are settled to what they bill (billing.limits.settle_abandoned). Conditional
    updates, so running it twice (or beside the call's own finish) changes nothing.
    Returns rows closed."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_s)
    pending = Activity.unscoped_objects.filter(status=Activity.Status.PENDING)
    stale = pending.filter(created_at__lt=cutoff).filter(
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff)
    )
    closed = 0
    while ids := list(stale.values_list("request_id", flat=True)[:RECONCILE_BATCH]):
        closed += _close_unfinished(ids, now)
    return closed


def _close_unfinished(request_ids: list[str], now: datetime) -> int:
    """Close the still-pending rows of ``request_ids`` as errors, billing their
    checkpoint, and settle their reservations; returns rows closed."""
    pending = Activity.unscoped_objects.filter(
        request_id__in=request_ids, status=Activity.Status.PENDING
    )
    closed = pending.filter(completion_tokens__gt=0).update(
        status=Activity.Status.ERROR,
        http_status=500,
        finished_at=now,
        error_message=f"{UNFINISHED}; the tokens delivered until then are billed",
    )
    closed += pending.update(
        status=Activity.Status.ERROR,
        http_status=500,
        error_message=UNFINISHED,
        cost_usd=Decimal(0),
        prompt_tokens=0,
        cached_tokens=0,
        finished_at=now,
    )
    # This run's rows: the same ids, finished now by the reconciler.
    ours = Activity.unscoped_objects.filter(
        request_id__in=request_ids, finished_at=now, error_message__startswith=UNFINISHED
    )
    settle_abandoned(
        list(ours.values("request_id", "api_key_id", "organisation_id", "created_at", "cost_usd"))
    )
    return closed

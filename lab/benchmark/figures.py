"""The load test's figures and its check against issue 9's "Done when" targets.

Pure functions of what was recorded: the client's ``Reply`` objects, the emulator's log
records (matched to requests by the tag in the last message) and the ledger rows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .faultclient import Reply
from .loadgen import pct

TAG = re.compile(r"loadtest (\w+) #(\d+) ")
CLOSE_P99_TARGET_MS = 1000.0
SERVED_TARGET = 0.99
# An upstream completing on its own this soon after the cut had its last tokens on the way.
RACE_S = 0.1


@dataclass(frozen=True)
class Row:
    """The ledger columns the load test checks."""

    request_id: str
    api_key_id: int | None
    status: str
    http_status: int | None
    completion_tokens: int


Target = tuple[str, bool | None, str]  # label, met (None: not measured), detail


def tag(run: str, index: int) -> str:
    return f"loadtest {run} #{index} "


def upstream_by_index(records: Iterable[dict], run: str) -> dict[int, list[dict]]:
    """The emulator's records of this run, by request index (retries give several)."""
    found: dict[int, list[dict]] = {}
    for record in records:
        match = TAG.match(record.get("last_message_head") or "")
        if match and match.group(1) == run:
            found.setdefault(int(match.group(2)), []).append(record)
    return found


def ms_summary(values: list[float]) -> str:
    ordered = sorted(values)
    if not ordered:
        return "n/a"
    return f"p50 {pct(ordered, 0.5):.0f} ms, p99 {pct(ordered, 0.99):.0f} ms (n={len(ordered)})"


def statuses(replies: Iterable[Reply]) -> dict[str, int]:
    """Histogram of HTTP statuses; requests with no reply counted by their error."""
    counts = Counter(
        str(r.status) if r.status else "cut before headers" if r.cut_at else f"no reply ({r.error})"
        for r in replies
    )
    return dict(sorted(counts.items()))


def not_json_or_sse(replies: Iterable[Reply]) -> list[Reply]:
    return [r for r in replies if r.kind == "other"]


def upstream_close(
    reply: Reply, records: list[dict], row_status: str | None = None
) -> tuple[str, float | None]:
    """For a cut request, what became of its upstream call(s), and when the last one ended
    (ms after the cut, when after it):

    - ``never-opened``: the gateway never called the upstream;
    - ``finished-before-cut``: the upstream was done before the client cut (the gateway was
      still relaying what it had);
    - ``closed``: the gateway closed it (the emulator logged ``cancelled``);
    - ``ended-with-cut``: it completed on its own within ``RACE_S`` of the cut (its last
      tokens were already on the way: nothing left to close);
    - ``ran-on (row success)`` / ``ran-on (row cancelled)``: it ran to completion later than
      that, the gateway never closed it: the disconnect was not honoured upstream;
    - ``not-closed``: still open once everything settled.
    """
    if not records:
        return "never-opened", None
    if any(r["status"] == "in_progress" or r.get("ended_at") is None for r in records):
        return "not-closed", None
    last = max(r["ended_at"] for r in records)
    if last <= reply.cut_at:
        return "finished-before-cut", None
    delay = (last - reply.cut_at) * 1000
    late = [r for r in records if r["status"] == "completed" and r["ended_at"] > reply.cut_at]
    if not late:
        return "closed", delay
    if all(r["ended_at"] <= reply.cut_at + RACE_S for r in late):
        return "ended-with-cut", delay
    return f"ran-on (row {row_status or 'missing'})", delay


# Upstream outcomes after which a cut request's row may say success: the provider had
# finished (or was finishing) as the client cut, and the gateway had relayed the whole
# stream, [DONE] included, before it could see the disconnect: a complete call (issue 9,
# finding 3: such calls must not be stored as cancelled).
DELIVERED_BEFORE_CUT = ("finished-before-cut", "ended-with-cut")


def accepted_request(reply: Reply, upstream: dict[int, list[dict]]) -> bool:
    """The gateway took the request on: it streamed (200), named it (X-Generation-Id) or
    called the upstream for it. A rejection before that (401, 429, an HTML 500) has no row."""
    return reply.status == 200 or bool(reply.generation_id) or reply.index in upstream


def ledger_per_request(
    replies: list[Reply], upstream: dict[int, list[dict]], rows: dict[int, list[Row]]
) -> dict[str, int]:
    """Rows lost (an accepted request without a row), doubled, still pending."""
    lost = doubled = pending = 0
    for reply in replies:
        mine = rows.get(reply.index, [])
        accepted = accepted_request(reply, upstream)
        lost += accepted and not mine
        doubled += len(mine) > 1
        pending += any(row.status == "pending" for row in mine)
    return {"lost": lost, "doubled": doubled, "pending": pending}


def cuts(
    replies: list[Reply], upstream: dict[int, list[dict]], rows: dict[int, list[Row]]
) -> tuple[dict, list[Target]]:
    """Figures and targets of the ``cuts`` scenario (rows keyed by request index)."""
    cut = [r for r in replies if r.cut_at is not None]
    outcomes, delays, example = Counter(), [], ""
    outcome_of: dict[int, str] = {}
    for reply in cut:
        mine = rows.get(reply.index)
        status = mine[0].status if mine else None
        outcome, delay = upstream_close(reply, upstream.get(reply.index, []), status)
        outcomes[outcome] += 1
        outcome_of[reply.index] = outcome
        if (outcome.startswith("ran-on") or outcome == "not-closed") and not example:
            example = _not_closed_example(reply, upstream[reply.index])
        if delay is not None:
            delays.append(delay)
    cut_rows = Counter()
    underbilled = wrong_status = 0
    for reply in cut:
        mine = rows.get(reply.index, [])
        if not mine:
            # Cut before it was accepted (while its key or admission was checked): no row
            # is expected; an accepted request without one is counted as lost below.
            cut_rows["no row"] += 1
            continue
        cut_rows[mine[0].status] += 1
        underbilled += mine[0].completion_tokens < reply.tokens
        relayed_whole = mine[0].status == "success" and (
            outcome_of[reply.index] in DELIVERED_BEFORE_CUT
        )
        wrong_status += mine[0].status != "cancelled" and not relayed_whole
    complete = [r for r in replies if r.served]
    complete_rows = Counter(
        rows[r.index][0].status if rows.get(r.index) else "no row" for r in complete
    )
    ledger = ledger_per_request(replies, upstream, rows)
    odd = not_json_or_sse(replies)
    p99 = pct(sorted(delays), 0.99) if delays else None
    figures = {
        "requests": len(replies),
        "statuses": statuses(replies),
        "completed streams": len(complete),
        "cuts": len(cut),
        "cuts before the first token": sum(r.tokens == 0 for r in cut),
        "upstream after a cut": dict(outcomes),
        "upstream closed after the cut": ms_summary(delays),
        "rows of cut requests": dict(cut_rows),
        "cut rows billed fewer tokens than delivered": underbilled,
        "rows of completed streams": dict(complete_rows),
        "rows lost / doubled / pending": ledger,
        "rejected before acceptance (no row expected)": sum(
            bool(r.status) and not accepted_request(r, upstream) for r in replies
        ),
        "responses neither JSON nor SSE": len(odd),
        "no reply (connection errors, timeouts)": sum(not r.status for r in replies),
    }
    cancelled_and_billed = wrong_status == 0
    ignored = sum(n for name, n in outcomes.items() if name.startswith("ran-on"))
    ignored += outcomes["not-closed"]
    targets: list[Target] = [
        (
            "every disconnect honoured (upstream closed)",
            ignored == 0,
            f"{ignored} of {len(cut)} cuts not honoured{example}",
        ),
        (
            "upstream closed <= 1 s after the cut (p99)",
            None if p99 is None else p99 <= CLOSE_P99_TARGET_MS,
            "n/a" if p99 is None else f"p99 {p99:.0f} ms",
        ),
        (
            "cut rows cancelled with the delivered tokens billed",
            cancelled_and_billed and underbilled == 0,
            f"{dict(cut_rows)}: {wrong_status} neither cancelled nor relayed whole before "
            f"the cut; {underbilled} billed fewer tokens than delivered",
        ),
        (
            "completed streams recorded as success",
            complete_rows.get("success", 0) == len(complete),
            str(dict(complete_rows)),
        ),
        ("0 rows lost, doubled or pending", not any(ledger.values()), str(ledger)),
        ("0 responses that are not JSON or SSE", not odd, _odd_detail(odd)),
    ]
    return figures, targets


def _not_closed_example(reply: Reply, records: list[dict]) -> str:
    record = records[-1]
    when = (
        f"after {reply.tokens} tokens"
        if reply.tokens
        else f"{reply.cut_at - reply.sent_at:.3f} s "
        f"after sending, {'after' if reply.status else 'before'} the response headers"
    )
    return (
        f", e.g. cut {when}: upstream {record['status']} with "
        f"{record['completion_tokens_sent']} tokens sent, received "
        f"{record['received_at'] - reply.cut_at:+.3f} s and ended "
        f"{(record['ended_at'] or 0) - reply.cut_at:+.3f} s from the cut"
    )


def _odd_detail(odd: list[Reply]) -> str:
    if not odd:
        return "0"
    first = odd[0]
    return f"{len(odd)}, e.g. HTTP {first.status} {first.content_type!r} {first.body_head[:60]!r}"


def by_generation_id(replies: list[Reply], rows: list[Row]) -> dict[str, int]:
    """Rows matched through ``X-Generation-Id``: lost, pending, unmatched (a row no client
    saw: a doubled row, or one of a request that got no reply)."""
    by_id: dict[str, list[Row]] = {}
    for row in rows:
        by_id.setdefault(row.request_id, []).append(row)
    seen = {r.generation_id for r in replies if r.generation_id}
    return {
        "lost": sum(1 for gid in seen if gid not in by_id),
        "pending": sum(row.status == "pending" for row in rows),
        "doubled or unmatched": sum(len(v) for gid, v in by_id.items() if gid not in seen)
        + sum(len(v) - 1 for v in by_id.values() if len(v) > 1),
    }


def burst(replies: list[Reply], rows: list[Row]) -> tuple[dict, list[Target]]:
    hist = statuses(replies)
    errors = [r for r in replies if r.status != 200]
    non_json_errors = [r for r in errors if r.kind != "json"]
    overload = [r for r in replies if r.status in (429, 503)]
    no_retry_after = sum(not r.retry_after for r in overload)
    ledger = by_generation_id(replies, rows)
    allowed = all(r.status in (200, 429, 503) for r in replies)
    figures = {
        "requests": len(replies),
        "statuses": hist,
        "served (200 + [DONE])": sum(r.served for r in replies),
        "error replies that are not JSON": len(non_json_errors),
        "429/503 without Retry-After": no_retry_after,
        "rows (by X-Generation-Id)": ledger,
    }
    targets: list[Target] = [
        (
            "only 200s and JSON 429/503",
            allowed and not non_json_errors,
            f"{hist}; non-JSON error bodies: {_odd_detail(non_json_errors)}",
        ),
        (
            "429/503 carry Retry-After",
            no_retry_after == 0 if overload else None,
            f"{no_retry_after} of {len(overload)} without",
        ),
        ("0 rows lost or pending", not ledger["lost"] and not ledger["pending"], str(ledger)),
    ]
    return figures, targets


def phases(replies: list[Reply], start: float, end: float) -> dict[str, list[Reply]]:
    """Requests sent before, during and after the fault window [start, end)."""
    split: dict[str, list[Reply]] = {"before": [], "during": [], "after": []}
    for reply in replies:
        at = reply.sent_at
        split["before" if at < start else "during" if at < end else "after"].append(reply)
    return split


def steady(
    replies: list[Reply], rows: list[Row], window: tuple[float, float], fault: str
) -> tuple[dict, list[Target]]:
    """Figures and targets of ``redis-outage`` and ``pg-pause`` (open-loop streams)."""
    served = sum(r.served for r in replies)
    share = served / len(replies) if replies else 0.0
    per_phase = {}
    for name, group in phases(replies, *window).items():
        ttft = [(r.first_token_at - r.sent_at) * 1000 for r in group if r.first_token_at]
        ok = sum(r.served for r in group)
        per_phase[name] = f"{ok}/{len(group)} served, TTFT {ms_summary(ttft)}"
    ledger = by_generation_id(replies, rows)
    odd = not_json_or_sse(replies)
    figures = {
        "requests": len(replies),
        "statuses": statuses(replies),
        "served (200 + [DONE])": f"{served} ({100 * share:.1f}%)",
        **{f"sent {name} the fault": text for name, text in per_phase.items()},
        "rows (by X-Generation-Id)": ledger,
        "responses neither JSON nor SSE": len(odd),
    }
    targets: list[Target] = []
    if fault == "redis-outage":
        targets.append(
            (
                f">= {SERVED_TARGET:.0%} of requests served",
                share >= SERVED_TARGET,
                f"{100 * share:.1f}%",
            )
        )
        targets.append(("0 rows lost", ledger["lost"] == 0, str(ledger)))
    else:
        lost_or_doubled = ledger["lost"] + ledger["doubled or unmatched"] + ledger["pending"]
        targets.append(("0 rows lost, doubled or pending", lost_or_doubled == 0, str(ledger)))
    targets.append(("0 responses that are not JSON or SSE", not odd, _odd_detail(odd)))
    return figures, targets


def render(name: str, figures: dict, targets: list[Target]) -> str:
    lines = [f"== {name} =="]
    lines += [f"  {label}: {value}" for label, value in figures.items()]
    lines.append("  Targets (issue 9, Done when):")
    for label, met, detail in targets:
        mark = "n/a " if met is None else ("MET " if met else "MISS")
        lines.append(f"    [{mark}] {label}: {detail}")
    return "\n".join(lines)

"""Optional OpenTelemetry traces: request -> attempt -> ledger spans in one trace, with
the generation id; nothing recorded while tracing is off."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from common import tracing
from common.aio import run_in_background
from common.logs import bind_generation_id


@pytest.fixture
def exporter():
    memory = InMemorySpanExporter()
    assert tracing.configure_tracing(exporter=memory)
    yield memory
    tracing.configure_tracing("off")


async def test_a_request_its_attempts_and_its_ledger_write_are_one_trace(exporter):
    async def ledger_write(parent) -> None:  # runs in a fresh context, like the ledger's
        bind_generation_id("gen-trace-1")  # so it binds the id again (common.logs)
        with tracing.span("ledger.write", parent=parent, status="success"):
            await asyncio.sleep(0)

    bind_generation_id("gen-trace-1")
    with tracing.span("chat.request", model="test/model-a"):
        for attempt_no, outcome in ((1, "timeout"), (2, "ok")):
            with tracing.span("upstream.attempt", attempt=attempt_no, outcome=outcome):
                pass
        parent = tracing.current_context()
    await run_in_background(ledger_write(parent))

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert len(exporter.get_finished_spans()) == 4
    request = spans["chat.request"]
    attempts = [s for s in exporter.get_finished_spans() if s.name == "upstream.attempt"]
    assert [a.attributes["outcome"] for a in attempts] == ["timeout", "ok"]
    assert all(a.parent.span_id == request.context.span_id for a in attempts)
    assert spans["ledger.write"].parent.span_id == request.context.span_id
    assert {s.context.trace_id for s in exporter.get_finished_spans()} == {request.context.trace_id}
    assert all(s.attributes["generation_id"] == "gen-trace-1" for s in spans.values())


def test_an_exception_is_recorded_on_its_span(exporter):
    with pytest.raises(RuntimeError), tracing.span("upstream.attempt"):
        raise RuntimeError("connection reset")
    (recorded,) = exporter.get_finished_spans()
    assert recorded.status.status_code.name == "ERROR"
    assert recorded.events[0].name == "exception"


def test_off_records_nothing():
    assert tracing.configure_tracing("off") is False
    with tracing.span("chat.request") as current:
        assert current is None
    assert tracing.current_context() is None


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="UBERLLM_TRACING"):
        tracing.configure_tracing("zipkin")

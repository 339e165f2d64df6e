"""Optional OpenTelemetry traces (request -> attempts -> ledger), behind a setting.

``UBERLLM_TRACING``: ``off`` (default: spans cost one function call and record
nothing), ``console`` (spans printed, for a terminal) or ``otlp`` (exported over
OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT``, the standard OpenTelemetry variables
apply). The hot path opens spans with ``span(name, **attributes)``; every span carries
the generation id bound for the request (common.logs), so a trace and its log lines
join on it. Work started in a fresh context (``run_in_background``) passes
``parent=current_context()`` captured before, so the ledger span stays in the request's
trace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from common.logs import current_generation_id

from .config import process_config

SERVICE_NAME = "uberllm-gateway"
_tracer = None  # set by configure_tracing; None while tracing is off


def configure_tracing(mode: str | None = None, exporter: Any = None) -> bool:
    """Install the tracer provider for this process (``mode`` defaults to the setting;
    ``exporter`` replaces the mode's, e.g. an in-memory one in tests). Returns whether
    tracing is on."""
    global _tracer
    mode = mode or process_config().tracing
    if mode == "off" and exporter is None:
        _tracer = None
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif mode == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif mode == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        raise ValueError(f"UBERLLM_TRACING must be off, console or otlp, not {mode!r}")
    _tracer = provider.get_tracer("uberllm")
    return True


def current_context() -> Any:
    """The current trace context (None while tracing is off), to pass as ``parent``."""
    if _tracer is None:
        return None
    from opentelemetry import context

    return context.get_current()


@contextlib.contextmanager
def span(name: str, *, parent: Any = None, **attributes: Any) -> Iterator[Any]:
    """A span named ``name`` (``chat.request``, ``upstream.attempt``, ``ledger.write``)
    around the block; yields it (None while tracing is off) to add attributes. An
    exception leaving the block is recorded on the span and re-raised."""
    if _tracer is None:
        yield None
        return
    generation_id = current_generation_id()
    if generation_id:
        attributes.setdefault("generation_id", generation_id)
    clean = {key: value for key, value in attributes.items() if value is not None}
    with _tracer.start_as_current_span(name, context=parent, attributes=clean) as current:
        yield current

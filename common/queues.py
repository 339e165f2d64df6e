"""Broker queue lengths, sampled for the ``uberllm_queue_size`` gauge."""

from __future__ import annotations

from celery import current_app as app  # the project's app (uberllm/celery.py)

from common import metrics

QUEUES = ("celery",)  # the project's one queue (every task is routed to the default)


def queue_sizes_sample(queues: tuple[str, ...] = QUEUES) -> dict[str, int]:
    """Read each queue's length from the broker (any kombu transport: a passive declare
    counts without consuming) and record it; returns {queue: messages waiting}."""

    sizes = {}
    with app.connection_for_read() as connection:
        channel = connection.default_channel
        for name in queues:
            try:
                declared = channel.queue_declare(queue=name, passive=True)
                sizes[name] = int(declared.message_count)
            except connection.channel_errors:  # not declared yet: nothing ever queued
                sizes[name] = 0
            metrics.set_queue_size(name, sizes[name])
    return sizes

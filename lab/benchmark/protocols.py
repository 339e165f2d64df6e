"""CPU cost of reading an Anthropic upstream's stream into OpenAI chunks.

    python -m lab.benchmark.protocols [--tokens 50] [--streams 2000]

One stream = message_start, a text block of ``tokens`` deltas, message_delta (usage),
message_stop; prints the best of 5 runs per stream and per event.
"""

from __future__ import annotations

import argparse
import time

import orjson

from providers.protocols.anthropic_messages import UpstreamReader


def stream_events(tokens: int) -> list[bytes]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "model": "claude",
            "usage": {"input_tokens": 100, "output_tokens": 1},
        },
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": " lorem"},
    }
    end = [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": tokens},
        },
        {"type": "message_stop"},
    ]
    return [orjson.dumps(e) for e in (start, block, *[delta] * tokens, *end)]


def measure(tokens: int, streams: int) -> tuple[float, int]:
    """(best seconds per stream, events per stream)."""
    events = stream_events(tokens)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(streams):
            reader = UpstreamReader()
            for data in events:
                reader.feed(data)
        best = min(best, (time.perf_counter() - started) / streams)
    return best, len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--streams", type=int, default=2000)
    args = parser.parse_args()
    per_stream, events = measure(args.tokens, args.streams)
    print(
        f"{events} events: {per_stream * 1e6:.0f} us per stream, "
        f"{per_stream * 1e6 / events:.1f} us per event"
    )


if __name__ == "__main__":
    main()

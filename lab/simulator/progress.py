"""A minimal progress line on stderr (tqdm is not a dependency)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

MIN_REQUESTS = 5_000  # shorter runs print nothing
REFRESH_S = 0.25
WIDTH = 30


class ProgressLine:
    """``ProgressLine(stderr)(label)`` returns a ``(done, total)`` callback: on a terminal
    it redraws one line; otherwise it prints a line at every 10%."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.interactive = bool(getattr(out, "isatty", lambda: False)())

    def __call__(self, label: str) -> Callable[[int, int], None]:
        started = time.perf_counter()
        state = {"drawn": 0.0, "decile": 0, "finished": False}

        def update(done: int, total: int) -> None:
            if total < MIN_REQUESTS or state["finished"]:
                return
            now = time.perf_counter()
            finished = done >= total
            decile = 10 * done // total
            if self.interactive:
                if not finished and now - state["drawn"] < REFRESH_S:
                    return
            elif decile <= state["decile"] and not finished:
                return
            state.update(drawn=now, decile=decile, finished=finished)
            filled = WIDTH * done // total
            bar = "#" * filled + "." * (WIDTH - filled)
            line = f"{label:>18} [{bar}] {done:>9,}/{total:,} {now - started:6.1f} s"
            if self.interactive:
                self.out.write("\r" + line + ("\n" if finished else ""))
            else:
                self.out.write(line + "\n")
            self.out.flush()

        return update

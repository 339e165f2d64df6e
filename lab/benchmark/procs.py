"""Reading CPU time and resident memory of process trees from ``/proc`` (Linux)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces.
    return raw[raw.rindex(")") + 2 :].split()


def children_map() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
            tree.setdefault(int(fields[1]), []).append(int(name))
    return tree


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants (uvicorn's supervisor and its workers)."""
    tree = children_map()
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(tree.get(pid, ()))
    return pids


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of ``pids`` (all their threads), in seconds."""
    ticks = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / CLK_TCK


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            pass
    return total


def cpu_reference_ms(iterations: int = 2_000_000) -> float:
    """A fixed pure-Python loop, best of three, in ms: how fast this machine's cores run
    the interpreter, so absolute figures of runs on different machines can be compared
    (the ratios to direct and to LiteLLM need no such help)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(iterations):
            total += i
        best = min(best, (time.perf_counter() - start) * 1000)
    return best


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ("" when unknown)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    with open("/proc/stat", "rb") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    total = sum(values[:8])
    return total - idle, total


@dataclass
class Watched:
    """A named process tree whose CPU and peak RSS are measured over a window."""

    name: str
    root: int
    pids: list[int]
    cpu_start: float = 0.0
    cpu_s: float = 0.0
    peak_rss: int = 0

    @classmethod
    def of(cls, name: str, root: int) -> Watched:
        return cls(name, root, tree_pids(root))

    def start(self) -> None:
        self.pids = tree_pids(self.root)
        self.cpu_start = cpu_seconds(self.pids)
        self.peak_rss = rss_bytes(self.pids)

    def sample(self) -> None:
        self.peak_rss = max(self.peak_rss, rss_bytes(self.pids))

    def stop(self) -> None:
        self.sample()
        self.cpu_s = cpu_seconds(self.pids) - self.cpu_start

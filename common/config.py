"""Typed settings: each app reads its knobs through one frozen config value, never by
string in the code that uses them.

``settings.UBERLLM`` (uberllm/settings.py) is a ``SettingsDict``: it counts its changes,
so a config built from it is rebuilt after one (a test's ``monkeypatch.setitem``, an
``override_settings`` that swaps the dict) and otherwise costs one identity check a read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from django.conf import settings

T = TypeVar("T")


class SettingsDict(dict):
    """A dict that counts its changes (``version``)."""

    version: int = 0

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.version += 1

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self.version += 1

    def pop(self, *args: Any) -> Any:
        self.version += 1
        return super().pop(*args)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.version += 1
        return super().setdefault(key, default)

    def clear(self) -> None:
        super().clear()
        self.version += 1


def settings_config(build: Callable[[Mapping[str, Any]], T]) -> Callable[[], T]:
    """A reader returning ``build(settings.UBERLLM)``, built again only when the settings
    dict was replaced or changed since the last read."""
    # the dict read (kept, so its id is never reused), its version, the value built
    built: list[Any] = [None, -1, None]

    def read() -> T:
        conf = settings.UBERLLM
        version = getattr(conf, "version", 0)
        if built[0] is not conf or built[1] != version:
            built[2] = build(conf)
            built[0], built[1] = conf, version
        return built[2]

    read.__doc__ = build.__doc__
    return read


def from_knobs(cls: type[T], conf: Mapping[str, Any]) -> T:
    """``cls``, a dataclass of knobs, with each field read from the key named like it in
    capitals and given the type of its default. A missing key, None or "" keeps the
    default (an unset environment variable reads as empty)."""
    values = {}
    for spec in fields(cls):  # type: ignore[arg-type]
        value = conf.get(spec.name.upper())
        if value is None or value == "":
            continue
        values[spec.name] = _like(value, spec.default)
    return cls(**values)


def _like(value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, tuple):
        return tuple(value)
    return type(default)(value)


def knobs_config(cls: type[T]) -> Callable[[], T]:
    """The reader of ``cls`` as ``from_knobs`` builds it from ``settings.UBERLLM``."""
    return settings_config(lambda conf: from_knobs(cls, conf))


def set_knob(name: str, value: Any) -> None:
    """Change one knob at run time (the lab's commands: the emulator on loopback)."""
    settings.UBERLLM[name] = value


def knob(name: str, default: Any = None) -> Any:
    """One knob's current value, for a tool that restores what it changed (the lab)."""
    return settings.UBERLLM.get(name, default)


@dataclass(frozen=True, slots=True)
class ProcessConfig:
    """The basement's and the process's knobs."""

    shared_key_prefix: str = "ullm"  # Redis keys and channels of this deployment
    tracing: str = "off"  # off, console or otlp
    metrics_token: str = ""  # a scraper's bearer token; empty: /metrics is a 404
    gc_thresholds: tuple[int, ...] = ()  # empty: Python's defaults
    drain_background_timeout_s: float = 30.0


process_config = knobs_config(ProcessConfig)

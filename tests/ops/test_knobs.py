"""The apps' typed configs are built by one rule (common/config.py ``from_knobs``): each
field from the knob named like it in capitals, as its default's type; unset keeps the
default."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from billing.config import billing_config
from common.config import from_knobs
from providers.config import providers_config


@dataclass(frozen=True)
class Knobs:
    retries: int = 2
    timeout_s: float = 1.5
    enabled: bool = False
    keys: tuple[str, ...] = ()
    archive: Path = Path("var/archive")
    name: str = "x"


def test_each_field_is_read_by_its_capitalised_name_as_its_default_type():
    conf = {
        "RETRIES": "5",
        "TIMEOUT_S": "0.25",
        "ENABLED": True,
        "KEYS": ["k1", "k2"],
        "ARCHIVE": "/srv/archive",
        "NAME": "y",
        "UNRELATED": "ignored",
    }
    assert from_knobs(Knobs, conf) == Knobs(5, 0.25, True, ("k1", "k2"), Path("/srv/archive"), "y")


def test_a_missing_none_or_empty_knob_keeps_its_default():
    assert from_knobs(Knobs, {"RETRIES": None, "TIMEOUT_S": "", "ENABLED": False}) == Knobs()


def test_the_apps_configs_follow_a_changed_setting(monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "INVITATION_MAX_AGE_H", "5")
    monkeypatch.setitem(settings.UBERLLM, "CREDENTIAL_KEYS", ["a", "b"])
    assert billing_config().invitation_max_age_h == 5.0
    assert providers_config().credential_keys == ("a", "b")

"""``onError`` is one type (issue 48): ``plugins.api.OnError``, re-exported by app.plugin_faults,
typing the class default and the tiers entry alike; a plugin setting the plain string still works."""

from __future__ import annotations

from app import plugin_faults
from app.config import effective_config, load_config_text
from plugins.api import OnError, Plugin


class Abstains(Plugin):
    name = "abstains-by-string"
    on_error = "abstain"  # the plain string, as plugins written before the enum say it


def test_one_enum() -> None:
    assert plugin_faults.OnError is OnError
    assert Plugin.on_error is OnError.FAIL
    assert OnError(Abstains.on_error) is OnError.ABSTAIN == Abstains.on_error


def test_the_entry_is_the_enum_and_prints_as_its_value() -> None:
    config = load_config_text(
        "tiers:\n- plugins:\n  - {name: priority, onError: abstain}\n", "c.yaml"
    )
    assert config.entries[0].option.onError is OnError.ABSTAIN
    printed = effective_config(config)["tiers"][0]["plugins"][0]
    assert type(printed["onError"]) is str and printed["onError"] == "abstain"

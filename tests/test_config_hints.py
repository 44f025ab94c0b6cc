"""An unknown option names every option a read or write takes, and the one closest to the typo."""

from __future__ import annotations

import pytest

import sleeper_spark as ss


@pytest.mark.parametrize(("typo", "meant"), [("partitionby", "partition_by"), ("wharehouse", "warehouse"),
                                             ("versionAsOff", "versionAsOf"), ("app_versoin", "app_version"),
                                             ("startingversions", "startingVersion")])
def test_an_unknown_option_suggests_the_closest_known_one(typo: str, meant: str) -> None:
    # Given an option with a typo beside a valid warehouse
    options = {"warehouse": "/tmp/warehouse", typo: "1"}

    # When a catalog is built from them
    with pytest.raises(ss.ConfigError) as raised:
        ss.Catalog.from_options(options)

    # Then the message starts with the typo and the closest option
    assert str(raised.value).startswith(f"unknown sleeper option {typo.lower()!r} (did you mean {meant!r}?). ")


def test_an_unknown_option_lists_the_read_and_write_options_too() -> None:
    with pytest.raises(ss.ConfigError) as raised:
        ss.Catalog.from_options({"warehouse": "/tmp/warehouse", "colour": "blue"})

    message = str(raised.value)
    assert message.startswith("unknown sleeper option 'colour'. Catalog options: catalog, ")
    for option in ("warehouse", "retry.*", "partition_by", "metadata.<key>", "app_id", "app_version",
                   "event_time_column", "versionAsOf", "timestampAsOf", "startingVersion"):
        assert option in message

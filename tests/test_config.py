"""Configuration from LOCKSHOP_* variables, and back again for child processes."""

from __future__ import annotations

import pytest

from shop.config import Config, ConfigError


def test_values_come_from_prefixed_variables():
    config = Config.from_env({"LOCKSHOP_STRATEGY": "local", "LOCKSHOP_BUSINESS_DELAY_MS": "25",
                              "LOCKSHOP_REDIS_URLS": "redis://a, redis://b",
                              "STRATEGY": "ignored", "LOCKSHOP_INSTANCE": "shop-9"})
    assert (config.strategy, config.business_delay_ms, config.instance) == ("local", 25, "shop-9")
    assert config.redis_urls == ("redis://a", "redis://b")


def test_a_config_survives_the_trip_through_the_environment():
    config = Config(database_url="sqlite:////tmp/x.db", strategy="local", business_delay_ms=5,
                    admin_token="t", redis_urls=("redis://a", "redis://b"), instance="i")
    assert Config.from_env(config.to_env()) == config


@pytest.mark.parametrize("env,needle", [
    ({"LOCKSHOP_BUSINESS_DELAY_MS": "x"}, "must be a whole number"),
    ({"LOCKSHOP_BUSINESS_DELAY_MS": "-1"}, "must be >= 0"),
    ({"LOCKSHOP_LOCK_TIMEOUT_MS": "-5"}, "must be >= 0"),
])
def test_bad_values_are_named(env, needle):
    with pytest.raises(ConfigError, match=needle):
        Config.from_env(env)

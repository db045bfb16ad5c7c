"""Each lab makes its broken lock fail, every time, and says how."""

from __future__ import annotations

import pytest

from conftest import require
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.workshop.labs import LABS, run_lab

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("name", sorted(LABS))
def test_the_lab_reproduces_its_failure(name, capsys):
    require(redis_server_binary() is not None, "redis-server is not installed")
    assert run_lab(name) is True
    out = capsys.readouterr().out
    assert out.rstrip().endswith("=> failure reproduced")
    if name in ("redis_setnx", "redis_setnx_expire"):
        assert "TTL -1" in out and "[503, 503, 503]" in out
    else:
        assert "B and C both hold it (True)" in out and "oversold 1" in out

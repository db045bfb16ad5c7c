"""docker-compose.yml, checked statically (no Docker engine runs here).

It must parse, hold every service the app needs, and agree with the app:
the environment is made of variables ``Config`` reads, the hosts and ports
it names are services of the file, and the commands are the ones the
launcher and the locustfiles use.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import fields
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from lockshop.cluster.launcher import gunicorn_arguments
from lockshop.console.launch import INSTANCE_APP
from shop.config import PREFIX, Config

ROOT = Path(__file__).resolve().parent.parent
SHOPS = ["shop-1", "shop-2", "shop-3"]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def services(compose) -> dict:
    return compose["services"]


def resolve(value: str) -> str:
    """${NAME:-default} as compose resolves it with NAME unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def shop_environment(services, name: str) -> dict[str, str]:
    return {k: resolve(str(v)) for k, v in services[name]["environment"].items()}


def test_every_service_the_app_needs_is_there(services):
    assert set(services) >= {"proxy", *SHOPS, "postgres", "redis", "zk1", "zk2", "zk3",
                             "locust-master", "locust-worker"}
    assert sum(name.startswith("redlock-") for name in services) == 5


@pytest.mark.parametrize("shop", SHOPS)
def test_shop_environment_is_what_config_reads(services, shop):
    environment = shop_environment(services, shop)
    known = {PREFIX + f.name.upper() for f in fields(Config)}
    assert set(environment) <= known, set(environment) - known
    config = Config.from_env(environment)  # parses, with no value refused
    assert config.instance == shop
    assert config.admin_token  # a workshop cluster is reachable by others: admin needs a token


def test_instances_have_their_own_names(services):
    assert len({shop_environment(services, s)["LOCKSHOP_INSTANCE"] for s in SHOPS}) == 3


def test_backend_addresses_point_at_services_of_this_file(services):
    config = Config.from_env(shop_environment(services, "shop-1"))
    database = urlsplit(config.database_url)
    postgres = services["postgres"]["environment"]
    assert database.hostname == "postgres" and database.port == 5432
    assert (database.username, database.password, database.path.lstrip("/")) == (
        postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], postgres["POSTGRES_DB"])
    assert urlsplit(config.redis_url).hostname == "redis"
    redlock_hosts = [urlsplit(u).hostname for u in config.redis_urls]
    assert sorted(redlock_hosts) == sorted(n for n in services if n.startswith("redlock-"))
    assert config.redis_url not in config.redis_urls  # Redlock's servers are independent
    assert [h.split(":") for h in config.zk_hosts.split(",")] == [
        ["zk1", "2181"], ["zk2", "2181"], ["zk3", "2181"]]


def test_the_zookeeper_ensemble_is_consistent(services):
    for number, name in enumerate(["zk1", "zk2", "zk3"], start=1):
        environment = services[name]["environment"]
        assert environment["ZOO_MY_ID"] == str(number)
        assert f"server.{number}={name}:2888:3888;2181" in environment["ZOO_SERVERS"].split()


@pytest.mark.parametrize("shop", SHOPS)
def test_shops_run_as_the_launcher_runs_them(services, shop):
    assert services[shop]["command"] == ["gunicorn", *gunicorn_arguments("0.0.0.0:8000", 16,
                                                                        INSTANCE_APP)]
    assert services[shop]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_dockerfile_serves_the_same_way_and_installs_the_extras():
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*?\])\s*$", dockerfile, re.M | re.S).group(1)
    assert yaml.safe_load(cmd.replace("\\\n", " ")) == ["gunicorn",
                                                       *gunicorn_arguments("0.0.0.0:8000", 16,
                                                                           INSTANCE_APP)]
    for copied in re.findall(r"^COPY (\S+) \S+$", dockerfile, re.M):
        assert (ROOT / copied).exists(), copied
    assert '".[postgres,redis,zookeeper,load]"' in dockerfile


def test_the_proxy_balances_over_every_shop(services):
    proxy = services["proxy"]
    mount = proxy["volumes"][0].split(":")
    conf = (ROOT / mount[0]).read_text()
    assert re.findall(r"server (shop-\d):8000;", conf) == SHOPS
    assert "proxy_pass http://shop;" in conf
    assert proxy["ports"] == ["127.0.0.1:8080:80"]


def test_locust_runs_the_flash_sale_distributed_against_every_shop(services):
    master, worker = services["locust-master"], services["locust-worker"]
    for service in (master, worker):
        locustfile = service["command"][service["command"].index("-f") + 1]
        assert (ROOT / locustfile).is_file()
        targets = resolve(service["environment"]["LOCKSHOP_TARGETS"]).split(",")
        assert targets == [f"http://{s}:8000" for s in SHOPS]
    assert "--master" in master["command"]
    assert shlex.join(worker["command"]).endswith("--worker --master-host locust-master")
    assert worker["deploy"]["replicas"] == 2

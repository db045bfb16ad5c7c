"""Every lab holds: its broken half breaks as the article says, and its fix holds
under the same steps. A lab whose broken version stopped breaking, or whose fix
stopped fixing, has a step that disagrees, and its verdict says so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import require
from lockshop.cluster.network import unavailable as network_unavailable
from lockshop.cluster.redis_servers import redis_server_binary
from lockshop.cluster.scratch import DEFAULT_SERVERS, server_error
from lockshop.cluster.zookeeper_servers import zookeeper_installed
from lockshop.workshop import labs
from lockshop.workshop.staging.record import BROKEN, FIX, MEASURE, Lab
from lockshop.workshop.staging.runner import run_labs
from lockshop.workshop.staging.stage import Parts

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    with Parts(tmp_path_factory.mktemp("labs")) as shared:
        yield shared


@pytest.mark.parametrize("lab_id", list(labs.LABS))
def test_the_lab_holds_with_both_halves(parts, lab_id, capsys):
    lab = labs.LABS[lab_id]
    require("redis" not in lab.needs or redis_server_binary() is not None,
            "redis-server is not installed")
    require("zookeeper" not in lab.needs or zookeeper_installed(), "ZooKeeper is not installed")
    require("hosts" not in lab.needs or network_unavailable() is None,
            f"cannot make hosts on this machine: {network_unavailable()}")
    require("mariadb" not in lab.needs or server_error(DEFAULT_SERVERS["mysql"]) is None,
            f"no MariaDB server at {DEFAULT_SERVERS['mysql']}")
    record, = run_labs([lab], parts=parts)
    assert record.holds, record.reason
    halves = [step.half for step in record.steps]
    if lab.measured:
        assert set(halves) == {MEASURE}
    else:
        assert BROKEN in halves and FIX in halves and halves.index(FIX) > halves.index(BROKEN)
    printed = capsys.readouterr().out
    assert "expected:" in printed and "observed:" in printed
    assert printed.rstrip().splitlines()[-1].startswith("  => holds")


def test_a_broken_half_that_does_not_break_is_a_lab_that_does_not_hold(parts, capsys):
    def stage(run):
        run.broken("none", "nothing guards it")
        run.check("buyers buy", expected="oversold", observed="nothing oversold", agrees=False)
        run.fix("atomic", "one statement")
        run.check("buyers buy", expected="correct", observed="correct", agrees=True)

    record, = run_labs([Lab("C99", "fake", "a fake lab", (), (), 1, stage)], parts=parts)
    assert record.verdict == "does not hold"
    assert record.reason.startswith("step 1 (broken): expected oversold")
    assert "DOES NOT HOLD" in capsys.readouterr().out


def test_a_lab_with_one_half_only_does_not_hold(parts):
    def stage(run):
        run.fix("atomic", "one statement")
        run.check("buyers buy", expected="correct", observed="correct", agrees=True)

    record, = run_labs([Lab("C98", "half", "half a lab", (), (), 1, stage)], parts=parts)
    assert record.verdict == "does not hold" and "both halves" in record.reason


def test_a_lab_that_cannot_stage_says_why(parts):
    def stage(run):
        raise RuntimeError("no such server")

    record, = run_labs([Lab("C97", "boom", "a lab that fails", (), (), 1, stage)],
                            parts=parts)
    assert record.verdict == "does not hold" and "no such server" in record.reason


def lockshop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lockshop.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_lab_list_groups_the_labs_by_article():
    done = lockshop("lab", "list")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("A0  ")
    for lab in labs.LABS.values():
        assert f"{lab.id:<4} {lab.name}" in done.stdout
    of_articles = [i for i in labs.LABS if int(i[1:]) <= 43]
    assert f"{len(of_articles)} of the articles' 43 lessons are staged" in done.stdout
    assert f"and {len(labs.LABS) - len(of_articles)} beyond them" in done.stdout


def test_a_lab_by_id_or_name_as_json():
    require(redis_server_binary() is not None, "redis-server is not installed")
    for name in ("C13", "redis_reentrant"):
        done = lockshop("lab", name, "--json")
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout)
        assert record["id"] == "C13" and record["verdict"] == "holds"
        assert {step["half"] for step in record["steps"]} == {BROKEN, FIX}
        assert all(step["expected"] and step["observed"] for step in record["steps"])


@pytest.mark.parametrize(("args", "message"), [
    (("lab", "C404"), "no lab named 'C404'"),
    (("lab", "all", "--article", "A9"), "no article 'A9'"),
])
def test_bad_lab_arguments_say_so_in_one_line(args, message):
    done = lockshop(*args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("lockshop: error: ")
    assert message in done.stderr


def test_a_mariadb_lab_uses_the_server_lockshop_mysql_url_names(parts, monkeypatch, capsys):
    """Here, a server that is not there: the lab is skipped and names that server."""
    nowhere = "mysql+pymysql://root@127.0.0.1:1/mysql"
    monkeypatch.setenv("LOCKSHOP_MYSQL_URL", nowhere)
    record, = run_labs([labs.LABS["C08"]], parts=parts)
    assert record.verdict == "skipped" and nowhere in record.reason

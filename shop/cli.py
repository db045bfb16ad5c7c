"""The ``lockshop`` command: run the cluster, the demo, the audit.

Errors end with one readable line on stderr and a non-zero exit:
2 for bad input or a failed start, 1 for an audit that is not correct.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from collections.abc import Sequence

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from locks import UnknownStrategy

from .audit import take_audit
from .bench import DEFAULT_SERVERS
from .catalogue import reset_catalogue
from .config import Config, ConfigError, locks_backends
from .db import backend_name, make_engine, make_sessions, normalise_url
from .errors import ShopError
from .processes import StartError
from .settings import (JOB_GUARDS, MAX_BUSINESS_DELAY_MS, MAX_JOB_MS, ClusterSettings,
                       read_settings, write_settings)
from .strategies import Strategies, catalogue
from .table import format_table

DEFAULT_RUNTIME_DIR = Path(".lockshop")
LAB_NAMES = ["redis_setnx", "redis_setnx_expire", "redis_plain_del", "redis_get_del"]


class CliError(Exception):
    """Something the user can fix; printed as one line."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = Config.from_env(**_overrides(args))
        return args.run(args, config)
    except KeyboardInterrupt:
        return 130
    except (CliError, ConfigError, ShopError, StartError, UnknownStrategy,
            SQLAlchemyError, OSError, ValueError) as error:
        print(f"lockshop: error: {_one_line(error)}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lockshop", description="A shop that shows which locking strategies oversell.")
    parser.add_argument("--database-url", help="overrides LOCKSHOP_DATABASE_URL "
                        "(default: sqlite:///.lockshop/lockshop.db)")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    up = commands.add_parser("up", help="start N instances on one database until Ctrl-C")
    up.add_argument("--instances", type=_positive, default=3)
    up.add_argument("--port", type=_port, default=8000, help="first port (default 8000)")
    up.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    up.add_argument("--threads", type=_positive, default=16, help="threads per instance")
    up.add_argument("--strategy", help="switch the cluster to this strategy at start")
    up.add_argument("--business-delay-ms", type=_delay, help="set the business delay at start")
    up.add_argument("--reset", action="store_true", help="restore the default catalogue at start")
    up.add_argument("--runtime-dir", type=Path, default=DEFAULT_RUNTIME_DIR)
    up.set_defaults(run=cmd_up)

    demo = commands.add_parser("demo", help="run a flash sale per strategy and print the table")
    demo.add_argument("--instances", type=_positive, default=3)
    demo.add_argument("--users", type=_positive, default=24, help="Locust users per run")
    demo.add_argument("--run-time", type=_positive, default=8, help="seconds per run")
    demo.add_argument("--business-delay-ms", type=_delay, default=20)
    demo.add_argument("--strategies", help="comma-separated names (default: every available one)")
    demo.add_argument("--keep", action="store_true", help="keep the runtime folder (logs, CSV)")
    _add_database_options(demo)
    demo.set_defaults(run=cmd_demo)

    lab = commands.add_parser("lab", help="make one broken-on-purpose lock fail, step by step")
    lab.add_argument("name", choices=[*LAB_NAMES, "all"])
    lab.set_defaults(run=cmd_lab)

    report = commands.add_parser("report", help="run every strategy through the scenarios; "
                                 "write report.md, report.html, charts, Locust files, JSON")
    report.add_argument("--output", type=Path, default=Path("report"))
    report.add_argument("--instances", type=_positive, default=3)
    report.add_argument("--users", type=_positive, default=24)
    report.add_argument("--run-time", type=_positive, default=8, help="seconds per run")
    report.add_argument("--business-delay-ms", type=_delay, default=20)
    report.add_argument("--strategies", help="comma-separated names (default: every usable one)")
    report.add_argument("--scenarios", help="comma-separated: flash_sale, seat_sale (default: both)")
    _add_database_options(report)
    report.set_defaults(run=cmd_report)

    bench = commands.add_parser("bench", help="measure strategies; print and write the figures")
    bench.add_argument("family", choices=["database", "redis", "zookeeper"],
                       help="which family to measure")
    bench.add_argument("--databases", default="sqlite,postgresql,mysql",
                       help="comma-separated: sqlite, postgresql, mysql (default: all three)")
    bench.add_argument("--postgres-url", default=DEFAULT_SERVERS["postgresql"],
                       help="an admin URL; the benchmark creates and drops its own database")
    bench.add_argument("--mysql-url", default=DEFAULT_SERVERS["mysql"])
    bench.add_argument("--strategies", help="comma-separated names (default: the family's)")
    bench.add_argument("--instances", type=_positive, default=3)
    bench.add_argument("--users", type=_positive, default=24)
    bench.add_argument("--run-time", type=_positive, default=None,
                       help="seconds per run (default: 6 for database, 3 for redis)")
    bench.add_argument("--business-delay-ms", type=_delay, default=0)
    bench.add_argument("--output", type=Path,
                       help="JSON file (default: bench-results/<family>.json)")
    bench.set_defaults(run=cmd_bench)

    audit = commands.add_parser("audit", help="print the audit; exit 1 if it is not correct")
    audit.add_argument("--url", help="ask this instance instead of the database")
    audit.add_argument("--json", action="store_true", help="print JSON")
    audit.set_defaults(run=cmd_audit)

    reset = commands.add_parser("reset", help="delete all orders and restore the catalogue")
    reset.set_defaults(run=cmd_reset)

    settings = commands.add_parser("settings", help="show or change the cluster's settings")
    settings.add_argument("--strategy")
    settings.add_argument("--business-delay-ms", type=_delay)
    settings.add_argument("--job-guard", choices=JOB_GUARDS,
                          help="what guards the scheduled jobs")
    for name in ("job-interval-ms", "unpaid-expiry-ms", "reminder-after-ms"):
        settings.add_argument(f"--{name}", type=_job_ms)
    settings.set_defaults(run=cmd_settings)

    strategies = commands.add_parser("strategies", help="list the strategies")
    strategies.set_defaults(run=cmd_strategies)
    return parser


# --- commands -------------------------------------------------------------------

def cmd_up(args: argparse.Namespace, config: Config) -> int:
    from .runs import own_servers

    _raise_on_sigterm()
    with own_servers(config, args.runtime_dir) as config:
        return _serve(config, args)


def _serve(config: Config, args: argparse.Namespace) -> int:
    from .launcher import Cluster

    cluster = Cluster(config, instances=args.instances, port=args.port, host=args.host,
                      threads=args.threads, runtime_dir=args.runtime_dir)
    sessions = make_sessions(make_engine(cluster.config.database_url))
    with cluster:
        _apply_start_options(sessions, cluster.config, args)
        print(f"lockshop: {args.instances} instance(s) on {_describe_db(cluster.config.database_url)}")
        if config.redis_url:
            print(f"  redis: {config.redis_url}")
        if config.redis_urls:
            print(f"  redlock servers: {', '.join(config.redis_urls)}")
        if config.zk_hosts:
            print(f"  zookeeper: {config.zk_hosts}")
        for instance in cluster.instances:
            print(f"  {instance.name}  {instance.url}   (log: {instance.log_path})")
        print(f"dashboard: {cluster.urls[0]}/    API: {cluster.urls[0]}/api/openapi.json")
        print("Ctrl-C stops them all.", flush=True)
        try:
            while all(i.process.poll() is None for i in cluster.instances):
                time.sleep(0.5)
        except KeyboardInterrupt:
            print("\nstopping…", flush=True)
            return 0
        dead = [i for i in cluster.instances if i.process.poll() is not None]
        raise CliError(f"{dead[0].name} exited with {dead[0].process.returncode}; "
                       f"see {dead[0].log_path}; stopped the others")


def cmd_demo(args: argparse.Namespace, config: Config) -> int:
    from .demo import run_demo

    return run_demo(config, instances=args.instances, users=args.users,
                    run_time_s=args.run_time, business_delay_ms=args.business_delay_ms,
                    strategies=_names(args.strategies), keep=args.keep,
                    server_admin_url=_server_admin_url(args))


def cmd_lab(args: argparse.Namespace, config: Config) -> int:
    from .labs import run_lab
    from .servers import redis_server_binary

    if redis_server_binary() is None:
        raise CliError("redis-server is not installed (./run installs it)")
    names = LAB_NAMES if args.name == "all" else [args.name]
    results = [run_lab(name) for name in names]
    return 0 if all(results) else 1


def cmd_report(args: argparse.Namespace, config: Config) -> int:
    from .report import SCENARIOS, run_report

    scenarios = _names(args.scenarios)
    unknown = sorted(set(scenarios or []) - set(SCENARIOS))
    if unknown:
        raise CliError(f"unknown scenario(s) {', '.join(unknown)}; "
                       f"choose from {', '.join(SCENARIOS)}")
    return run_report(config, output=args.output, instances=args.instances, users=args.users,
                      run_time_s=args.run_time, business_delay_ms=args.business_delay_ms,
                      strategies=_names(args.strategies), scenarios=scenarios,
                      server_admin_url=_server_admin_url(args))


def cmd_bench(args: argparse.Namespace, config: Config) -> int:
    output = args.output or Path("bench-results") / f"{args.family}.json"
    if args.family == "redis":
        from .bench_redis import bench_redis
        from .servers import redis_server_binary
        if redis_server_binary() is None:
            raise CliError("redis-server is not installed (./run installs it)")
        bench_redis(seconds=args.run_time or 3, output=output)
        return 0
    if args.family == "zookeeper":
        from .bench_zookeeper import bench_zookeeper
        from .servers import redis_server_binary
        from .zk_servers import zookeeper_installed
        if not zookeeper_installed() or redis_server_binary() is None:
            raise CliError("the ZooKeeper benchmark needs ZooKeeper and redis-server "
                           "(./run installs both)")
        bench_zookeeper(seconds=args.run_time or 3, output=output)
        return 0
    from .bench import bench_database

    databases = _names(args.databases) or []
    unknown = sorted(set(databases) - {"sqlite", "postgresql", "mysql"})
    if unknown:
        raise CliError(f"unknown database(s) {', '.join(unknown)}; "
                       "choose from sqlite, postgresql, mysql")
    names = _names(args.strategies)
    for name in names or []:
        catalogue_names = [s.name for s in catalogue()]
        if name not in catalogue_names:
            raise UnknownStrategy(name, catalogue_names)
    bench_database(config, databases=databases, strategies=names,
                   servers={"postgresql": args.postgres_url, "mysql": args.mysql_url},
                   instances=args.instances, users=args.users,
                   run_time_s=args.run_time or 6, business_delay_ms=args.business_delay_ms,
                   output=output)
    return 0


def cmd_audit(args: argparse.Namespace, config: Config) -> int:
    if args.url:
        audit_dict = _fetch_json(f"{args.url.rstrip('/')}/api/admin/audit", config.admin_token)
    else:
        audit_dict = take_audit(_sessions(config)).as_dict()
    if args.json:
        print(json.dumps(audit_dict, indent=2))
    else:
        print(format_audit(audit_dict))
    return 0 if audit_dict["correct"] else 1


def cmd_reset(args: argparse.Namespace, config: Config) -> int:
    reset_catalogue(_sessions(config, create=True))
    print("catalogue restored, orders deleted")
    return 0


def cmd_settings(args: argparse.Namespace, config: Config) -> int:
    sessions = _sessions(config)
    if args.strategy is not None:
        _check_strategy(config, args.strategy)
    with sessions.begin() as session:
        write_settings(session, strategy=args.strategy, business_delay_ms=args.business_delay_ms,
                       job_guard=args.job_guard, job_interval_ms=args.job_interval_ms,
                       unpaid_expiry_ms=args.unpaid_expiry_ms,
                       reminder_after_ms=args.reminder_after_ms)
    with sessions.begin() as session:
        current = read_settings(session, ClusterSettings.from_config(config))
    print(f"strategy {current.strategy}, business delay {current.business_delay_ms} ms")
    guard = "leader election" if current.job_guard == "leader" else "the strategy"
    print(f"jobs every {current.job_interval_ms} ms (0: off), guarded by {guard}; unpaid orders "
          f"expire after {current.unpaid_expiry_ms} ms, reminded after "
          f"{current.reminder_after_ms} ms")
    return 0


def cmd_strategies(args: argparse.Namespace, config: Config) -> int:
    rows = [(s.name, s.family, "yes" if s.correct_across_instances else "no",
             ", ".join(s.requires) or "-", s.summary) for s in catalogue()]
    print(format_table(("name", "family", "correct across instances", "needs", "what it is"),
                       rows))
    return 0


# --- helpers --------------------------------------------------------------------

def format_audit(audit: dict) -> str:
    rows = [(p["product_id"], p["sku"], p["kind"], p["initial"], p["remaining"], p["sold"],
             p["oversold"], p["lost_updates"], p["double_booked_seats"], p["retries"],
             p["stale_writes_rejected"], "yes" if p["correct"] else "NO") for p in audit["products"]]
    table = format_table(("id", "sku", "kind", "initial", "remaining", "sold", "oversold",
                          "lost updates", "double-booked", "retries", "stale writes", "correct"),
                         rows)
    jobs = audit["jobs"]
    return (f"{table}\n\njobs: {jobs['runs']} runs for {jobs['fire_times']} fire times "
            f"({jobs['duplicate_runs']} duplicate), {jobs['orders_expired']} orders expired "
            f"({jobs['stock_restored_more_than_once']} restorations too many), "
            f"{jobs['reminders']} reminders ({jobs['duplicate_reminders']} duplicate)\n"
            f"audit: {'correct' if audit['correct'] else 'NOT correct'}")


def _sessions(config: Config, create: bool = False):
    url = normalise_url(config.database_url)
    if backend_name(url) == "sqlite" and not create:
        path = make_url(url).database
        if not path or not Path(path).is_file():
            raise CliError(f"no database at {path}: start the shop with 'lockshop up' "
                           "or set LOCKSHOP_DATABASE_URL / --database-url")
    from .app import create_schema
    from .launcher import absolute_sqlite_url
    engine = make_engine(absolute_sqlite_url(url))
    create_schema(engine)
    return make_sessions(engine)


def _add_database_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--database", choices=["sqlite", "postgresql", "mysql"],
                         default="sqlite", help="run on a scratch database of this machine's "
                         "PostgreSQL or MariaDB server (default: a fresh SQLite file)")
    command.add_argument("--server-url", help="the admin URL of that server (default: "
                         "postgresql://postgres@127.0.0.1:5432/postgres, mysql://root@127.0.0.1:3306/)")


def _server_admin_url(args: argparse.Namespace) -> str | None:
    if args.database == "sqlite":
        return None
    return args.server_url or DEFAULT_SERVERS[args.database]


def _check_strategy(config: Config, name: str) -> None:
    """``UnknownStrategy`` names the known ones; a wrong database is said too."""
    strategies = Strategies(locks_backends(config), backend_name(config.database_url))
    strategies.get(name)
    strategies.refuse_unusable(name)


def _apply_start_options(sessions, config: Config, args: argparse.Namespace) -> None:
    from sqlalchemy import select

    from .models import Product
    if args.strategy is not None:
        _check_strategy(config, args.strategy)
    with sessions.begin() as session:
        write_settings(session, strategy=args.strategy, business_delay_ms=args.business_delay_ms)
        empty = session.scalar(select(Product.id).limit(1)) is None
    if args.reset or empty:
        reset_catalogue(sessions)


def _fetch_json(url: str, token: str | None) -> dict:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        detail = error.read()[:200].decode(errors="replace")
        raise CliError(f"{url} answered {error.code}: {detail}") from None
    except urllib.error.URLError as error:
        raise CliError(f"cannot reach {url}: {error.reason}") from None


def _describe_db(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _raise_on_sigterm() -> None:
    # SIGTERM takes the same clean path as Ctrl-C: stop every instance.
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def _overrides(args: argparse.Namespace) -> dict:
    return {"database_url": args.database_url} if args.database_url else {}


def _names(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    return [n.strip() for n in raw.split(",") if n.strip()]


def _positive(raw: str) -> int:
    value = _int(raw)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _port(raw: str) -> int:
    value = _int(raw)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {value}")
    return value


def _delay(raw: str) -> int:
    value = _int(raw)
    if not 0 <= value <= MAX_BUSINESS_DELAY_MS:
        raise argparse.ArgumentTypeError(f"must be 0 to {MAX_BUSINESS_DELAY_MS} ms, got {value}")
    return value


def _job_ms(raw: str) -> int:
    value = _int(raw)
    if not 0 <= value <= MAX_JOB_MS:
        raise argparse.ArgumentTypeError(f"must be 0 to {MAX_JOB_MS} ms, got {value}")
    return value


def _int(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {raw!r}") from None


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


if __name__ == "__main__":
    sys.exit(main())

"""What each ``lockshop`` command does, once its arguments are parsed."""

from __future__ import annotations

import argparse
import faulthandler
import inspect
import json
import logging
import signal
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import make_url

from locks import UnknownStrategy
from lockshop.invoked import lockshop_command
from lockshop.cluster.client import ShopClient
from lockshop.cluster.scratch import DEFAULT_SERVERS
from lockshop.table import format_table
from shop.app import create_schema
from shop.config import Config, locks_backends
from shop.i18n import N_, _, ngettext, yes_no
from shop.orders.order_strategies import Strategies, all_strategies
from shop.store.audit import take_audit
from shop.store.db import backend_name, make_engine, make_sessions, normalise_url
from shop.store.models import Product
from shop.store.products import reset_products
from shop.store.settings import ClusterSettings, read_settings, write_settings


class CliError(Exception):
    """Something the user can fix; printed as one line."""


# --- commands -------------------------------------------------------------------

def cmd_up(args: argparse.Namespace, config: Config) -> int:
    from lockshop.cli.room_limits import refusal
    from lockshop.cli.room_limits import room_limits as probe_room_limits
    from lockshop.cluster.network import Network, unavailable
    from lockshop.cluster.servers import own_servers

    room_limits = probe_room_limits(args.cgroup_root)  # before anything starts
    if room_limits.problem and not args.room_without_limits:
        raise CliError(refusal(room_limits))
    _raise_on_sigterm()
    # `kill -USR1 <pid>` prints where every thread of a launcher that will not stop is.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    with ExitStack() as stack:
        network = None
        if args.hosts:
            problem = unavailable()
            if problem:
                raise CliError(f"--hosts: cannot make hosts on this machine: {problem}")
            network = stack.enter_context(Network())
        postgres = None
        if args.database == "postgresql":
            postgres, config = _postgres_of_its_own(config, network, stack)
        servers = stack.enter_context(own_servers(config, args.runtime_dir, network))
        if postgres is not None:
            servers.started[postgres.name] = postgres  # the console may stop and start it
        return _serve(servers, args, network, room_limits)


def _postgres_of_its_own(config: Config, network, stack: ExitStack):
    """A PostgreSQL server started for this run (on host "postgres" of ``network``, if
    any: the machine's own server listens on a loopback no host can reach), and the
    configuration pointing at a database on it."""
    from lockshop.cluster.network import LOOPBACK
    from lockshop.cluster.postgres_servers import PostgresServer, postgres_unavailable
    from lockshop.cluster.scratch import scratch_database

    problem = postgres_unavailable()
    if problem:
        raise CliError(f"--database postgresql: {problem}")
    server = stack.enter_context(PostgresServer(
        host=network.host("postgres") if network is not None else LOOPBACK))
    url = stack.enter_context(scratch_database(server.admin_url, "lockshop"))
    return server, replace(config, database_url=url)


def _serve(servers, args: argparse.Namespace, network=None, room_limits=None) -> int:
    from lockshop.cluster.launcher import Cluster
    from lockshop.console.launch import Console

    # The console's control takes its port first: every instance is told where it answers.
    console = Console(args.host, args.control_port)
    cluster = Cluster(servers.config, instances=args.instances, port=args.port, host=args.host,
                      threads=args.threads, runtime_dir=args.runtime_dir, network=network,
                      **console.served())
    # The set-up is done before any instance starts: once one answers, a reset or a
    # settings change sent to it stands (it used to be overwritten by the set-up).
    cluster.prepare_database()
    _apply_start_options(make_sessions(make_engine(cluster.config.database_url)),
                         cluster.config, args)
    with cluster, console:  # the control closes before the instances stop
        control = console.start(cluster, servers.started, args.runtime_dir / "console",
                                args.room_code, args.gradings, room_limits)
        _say_what_runs(cluster, servers.config, console, control.room.code, room_limits)
        return _watch(cluster)


def _say_what_runs(cluster, config: Config, console, room_code: str,
                   room_limits=None) -> None:
    from lockshop.cli.room_limits import say_room_limits
    from lockshop.cluster.addresses import reachable_url
    from lockshop.console import CONTROL_PORT

    control_url = console.control_url  # every address printed is one a laptop reaches
    print(ngettext("lockshop: %(count)s instance on %(database)s",
                   "lockshop: %(count)s instances on %(database)s", len(cluster.instances),
                   count=len(cluster.instances),
                   database=_describe_db(cluster.config.database_url)))
    if config.redis_url:
        print(f"  redis: {config.redis_url}")
    if config.redis_urls:
        print("  " + _("redlock servers: %(urls)s", urls=", ".join(config.redis_urls)))
    if config.zk_hosts:
        print(f"  zookeeper: {config.zk_hosts}")
    for instance in cluster.instances:
        print(f"  {instance.name}  {reachable_url(instance.url)}   "
              + _("(log: %(path)s)", path=instance.log_path))
    print("  " + _("control (labs, faults, sales): %(url)s", url=control_url))
    if console.moved:
        print("  " + _("port %(port)s was taken (another lockshop up?): the control and the "
                       "room answer on another port this time", port=CONTROL_PORT))
    # Said for students, who run their own clone's front door.
    print("  " + _("room code %(code)s: students who check on their own machines post to the "
                   "board with ./run exercise check N FILE --report %(url)s --room %(code)s "
                   "--name NAME", code=room_code, url=control_url))
    if cluster.network is not None:
        lan = cluster.network.as_dict()
        print("  " + _("hosts on bridge %(bridge)s (this machine: %(machine)s): %(hosts)s",
                       bridge=lan["bridge"], machine=lan["machine"],
                       hosts=", ".join(f"{name} {address}"
                                       for name, address in lan["hosts"].items())))
    shop = reachable_url(cluster.urls[0])
    print(_("console: %(console)s    dashboard: %(dashboard)s    API: %(api)s",
            console=f"{shop}/console", dashboard=f"{shop}/", api=f"{shop}/api/openapi.json"))
    # "room:" as "redis:" above: a fixed word a script can find, in every language.
    print(f"room: {console.room_url}    " + _("(code %(code)s)", code=room_code))
    if room_limits is not None:
        say_room_limits(room_limits)
    if not config.admin_token:
        print("  " + _("no admin token (LOCKSHOP_ADMIN_TOKEN): anyone who reaches the "
                       "console can act on the cluster"))
    # tests/helpers.lockshop_up reads up to this line: every language starts it "Ctrl-C".
    print(_("Ctrl-C stops them all."), flush=True)


def _watch(cluster) -> int:
    """Until Ctrl-C. An instance may go down on purpose (the console kills and restarts
    them): say so, and keep the rest running."""
    down: set[str] = set()
    try:
        while True:
            for instance in cluster.instances:
                stopped = instance.process.poll() is not None
                if stopped and instance.name not in down:
                    print(_("%(name)s is down (exit %(code)s); the console can restart it; "
                            "log: %(path)s", name=instance.name,
                            code=instance.process.returncode, path=instance.log_path),
                          flush=True)
                    down.add(instance.name)
                elif not stopped:
                    down.discard(instance.name)
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\n" + _("stopping…"), flush=True)
        return 0


def cmd_demo(args: argparse.Namespace, config: Config) -> int:
    from lockshop.workshop.demo import run_demo

    _check_names(_names(args.strategies))  # a typo is said now, not after the start
    return run_demo(config, instances=args.instances, users=args.users,
                    run_time_s=args.run_time, business_delay_ms=args.business_delay_ms,
                    strategies=_names(args.strategies), keep=args.keep,
                    server_admin_url=_server_admin_url(args))


def cmd_soak(args: argparse.Namespace, config: Config) -> int:
    from lockshop import soak
    from lockshop.cluster.network import unavailable

    problem = unavailable()
    if problem:
        raise CliError(_("the soak runs on hosts of this machine, and cannot here: %(problem)s",
                         problem=problem))
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    logging.getLogger("locks").setLevel(logging.ERROR)
    _raise_on_sigterm()  # namespaces, servers and instances go, as on Ctrl-C
    results = soak.run_soak(_names(args.strategies), minutes=args.minutes, seed=args.seed,
                            buyers=args.buyers, database=args.database)
    print()
    soak.print_table(results)
    if args.json:
        args.json.write_text(json.dumps([r.as_dict() for r in results], indent=2))
        print(_("figures: %(file)s", file=args.json))
    return 0 if all(r.correct for r in results) else 1


def cmd_lab(args: argparse.Namespace, config: Config) -> int:
    from lockshop.workshop import labs
    from lockshop.workshop.staging.runner import run_labs

    # A lab drops connections and kills servers on purpose: kazoo's warnings about it
    # would drown the steps that explain it.
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    logging.getLogger("locks").setLevel(logging.ERROR)
    if args.article and args.article.upper() not in labs.ARTICLES:
        raise CliError(_("no article %(article)r; choose from %(articles)s",
                         article=args.article, articles=", ".join(labs.ARTICLES)))
    if args.name == "list":
        if args.json:
            print(json.dumps([{"id": lab.id, "name": lab.name, "title": lab.title,
                               "articles": lab.articles, "needs": lab.needs,
                               "seconds": lab.seconds}
                              for lab in _chosen_labs(labs, args.article)], ensure_ascii=False))
        else:
            print(labs.listing() if not args.article else "\n".join(
                f"{lab.id:<4} {lab.name:<22} ~{lab.seconds:>2} s  {_(lab.title)}"
                for lab in _chosen_labs(labs, args.article)))
        return 0
    if args.name == "all":
        chosen = _chosen_labs(labs, args.article)
    else:
        try:
            chosen = [labs.find(args.name)]
        except KeyError:
            raise CliError(_("no lab named %(name)r; '%(lockshop)s lab list' lists them",
                             name=args.name, lockshop=lockshop_command())) from None
    if args.source:
        for lab in chosen:
            print(lab_source(lab))
        return 0
    _check_lab_needs(chosen)
    rounds = []
    for number in range(1, args.repeat + 1):
        if args.repeat > 1 and not args.json:
            print(_("--- round %(number)s of %(rounds)s", number=number, rounds=args.repeat),
                  flush=True)
        rounds.append(run_labs(chosen, as_json=args.json))
    if not args.json:
        _summarise_labs(rounds)
    return 0 if all(r.verdict in ("holds", "skipped") for records in rounds for r in records) else 1


def lab_source(lab) -> str:
    """Where a lab is staged, ``path:line``, and the code that stages it."""
    lines, first = inspect.getsourcelines(lab.stage)
    path = Path(inspect.getsourcefile(lab.stage)).resolve()
    try:
        path = path.relative_to(Path.cwd())
    except ValueError:
        pass
    return f"# {lab.id} {lab.name}: {path}:{first}\n" + "".join(lines)


def _summarise_labs(rounds: list) -> None:
    """One line for one lab; a tally per lab (held / rounds) for several."""
    records = [r for records in rounds for r in records]
    if len(records) == 1:
        return
    skipped = sorted({r.id for r in records if r.verdict == "skipped"})
    failed = [r for r in records if r.verdict not in ("holds", "skipped")]
    if len(rounds) > 1:
        print("\n" + _("lab    held  seconds (min-max)"))
        for lab_records in zip(*rounds, strict=True):
            held = sum(r.holds for r in lab_records)
            times = [r.seconds for r in lab_records]
            print(f"{lab_records[0].id:<5} {held:>2}/{len(lab_records):<2}  "
                  f"{min(times):g}-{max(times):g}")
    print(_("%(held)s of %(runs)s lab runs held", held=sum(r.holds for r in records),
            runs=len(records))
          + (_("; skipped: %(labs)s", labs=", ".join(skipped)) if skipped else "")
          + (_("; did not hold: %(labs)s", labs=", ".join(sorted({r.id for r in failed})))
             if failed else ""))


def _chosen_labs(labs, article: str | None) -> list:
    return labs.of_article(article) if article else list(labs.LABS.values())


def _check_lab_needs(chosen) -> None:
    from lockshop.cluster.redis_servers import redis_server_binary
    from lockshop.cluster.zookeeper_servers import zookeeper_installed

    needs = {need for lab in chosen for need in lab.needs}
    if "redis" in needs and redis_server_binary() is None:
        raise CliError(_("these labs need redis-server, which is not installed (./run "
                         "installs it)"))
    if "zookeeper" in needs and not zookeeper_installed():
        raise CliError(_("these labs need ZooKeeper, which is not installed (./run "
                         "installs it)"))


def cmd_report(args: argparse.Namespace, config: Config) -> int:
    from lockshop.workshop.report import SCENARIOS, run_report

    scenarios = _names(args.scenarios)
    unknown = sorted(set(scenarios or []) - set(SCENARIOS))
    if unknown:
        raise CliError(_("unknown scenario(s) %(unknown)s; choose from %(known)s",
                         unknown=", ".join(unknown), known=", ".join(SCENARIOS)))
    _check_names(_names(args.strategies))
    return run_report(config, output=args.output, instances=args.instances, users=args.users,
                      run_time_s=args.run_time, business_delay_ms=args.business_delay_ms,
                      strategies=_names(args.strategies), scenarios=scenarios,
                      server_admin_url=_server_admin_url(args))


def cmd_bench(args: argparse.Namespace, config: Config) -> int:
    output = args.output or Path("bench-results") / f"{args.family}.json"
    if args.family == "shop":
        from lockshop.bench.shop import bench_shop
        names = _names(args.strategies)
        for name in names or []:
            known = [s.name for s in all_strategies()]
            if name not in known:
                raise UnknownStrategy(name, known)
        bench_shop(config, strategies=names, instances=args.instances,
                   connections=args.connections, seconds=args.run_time or 3, output=output)
        return 0
    if args.family == "redis":
        from lockshop.bench.redis_locks import bench_redis
        from lockshop.cluster.redis_servers import redis_server_binary
        if redis_server_binary() is None:
            raise CliError(_("redis-server is not installed (./run installs it)"))
        bench_redis(seconds=args.run_time or 3, output=output)
        return 0
    if args.family == "zookeeper":
        from lockshop.bench.zookeeper_locks import bench_zookeeper
        from lockshop.cluster.redis_servers import redis_server_binary
        from lockshop.cluster.zookeeper_servers import zookeeper_installed
        if not zookeeper_installed() or redis_server_binary() is None:
            raise CliError(_("the ZooKeeper benchmark needs ZooKeeper and redis-server "
                             "(./run installs both)"))
        bench_zookeeper(seconds=args.run_time or 3, output=output)
        return 0
    from lockshop.bench.database import bench_database

    databases = _names(args.databases) or []
    unknown = sorted(set(databases) - {"sqlite", "postgresql", "mysql"})
    if unknown:
        raise CliError(_("unknown database(s) %(unknown)s; choose from sqlite, postgresql, "
                         "mysql", unknown=", ".join(unknown)))
    names = _names(args.strategies)
    for name in names or []:
        known = [s.name for s in all_strategies()]
        if name not in known:
            raise UnknownStrategy(name, known)
    bench_database(config, databases=databases, strategies=names,
                   servers={"postgresql": args.postgres_url, "mysql": args.mysql_url},
                   instances=args.instances, users=args.users,
                   run_time_s=args.run_time or 6, business_delay_ms=args.business_delay_ms,
                   output=output)
    return 0


def cmd_audit(args: argparse.Namespace, config: Config) -> int:
    if args.url:
        audit_dict = ShopClient(args.url, config.admin_token).audit()
    else:
        audit_dict = take_audit(_sessions(config)).as_dict()
    if args.json:
        print(json.dumps(audit_dict, indent=2))
    else:
        print(format_audit(audit_dict))
    return 0 if audit_dict["correct"] else 1


def cmd_reset(args: argparse.Namespace, config: Config) -> int:
    reset_products(_sessions(config, create=True))
    print(_("products restored, orders deleted"))
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
    print(_("strategy %(strategy)s, business delay %(delay)s ms", strategy=current.strategy,
            delay=current.business_delay_ms))
    guard = _("leader election") if current.job_guard == "leader" else _("the strategy")
    print(_("jobs every %(interval)s ms (0: off), guarded by %(guard)s; unpaid orders expire "
            "after %(expiry)s ms, reminded after %(reminder)s ms",
            interval=current.job_interval_ms, guard=guard, expiry=current.unpaid_expiry_ms,
            reminder=current.reminder_after_ms))
    return 0


def cmd_strategies(args: argparse.Namespace, config: Config) -> int:
    rows = [(s.name, s.family, yes_no(s.correct_across_instances),
             ", ".join(s.requires) or "-", _(s.summary)) for s in all_strategies()]
    print(format_table([_(h) for h in STRATEGY_HEADERS], rows))
    return 0


# --- helpers --------------------------------------------------------------------

STRATEGY_HEADERS = (N_("name"), N_("family"), N_("correct across instances"), N_("needs"),
                    N_("what it is"))
AUDIT_HEADERS = (N_("id"), N_("sku"), N_("kind"), N_("initial"), N_("remaining"), N_("sold"),
                 N_("oversold"), N_("lost updates"), N_("double-booked"), N_("retries"),
                 N_("stale writes"), N_("correct"))


def format_audit(audit: dict) -> str:
    rows = [(p["product_id"], p["sku"], p["kind"], p["initial"], p["remaining"], p["sold"],
             p["oversold"], p["lost_updates"], p["double_booked_seats"], p["retries"],
             p["stale_writes_rejected"], _("yes") if p["correct"] else _("NO"))
            for p in audit["products"]]
    table = format_table([_(h) for h in AUDIT_HEADERS], rows)
    jobs = audit["jobs"]
    return (table + "\n\n" + _(
        "jobs: %(runs)s runs for %(fire_times)s fire times (%(duplicate_runs)s duplicate), "
        "%(expired)s orders expired (%(restored)s restorations too many), %(reminders)s "
        "reminders (%(duplicate_reminders)s duplicate)", runs=jobs["runs"],
        fire_times=jobs["fire_times"], duplicate_runs=jobs["duplicate_runs"],
        expired=jobs["orders_expired"], restored=jobs["stock_restored_more_than_once"],
        reminders=jobs["reminders"], duplicate_reminders=jobs["duplicate_reminders"])
        + "\n" + (_("audit: correct") if audit["correct"] else _("audit: NOT correct")))


def _sessions(config: Config, create: bool = False):
    url = normalise_url(config.database_url)
    if backend_name(url) == "sqlite" and not create:
        path = make_url(url).database
        if not path or not Path(path).is_file():
            raise CliError(_("no database at %(path)s: start the shop with '%(lockshop)s up' "
                             "or set LOCKSHOP_DATABASE_URL / --database-url", path=path,
                             lockshop=lockshop_command()))
    from lockshop.cluster.launcher import absolute_sqlite_url
    engine = make_engine(absolute_sqlite_url(url))
    create_schema(engine)
    return make_sessions(engine)


def _check_names(names: list[str] | None) -> None:
    """``UnknownStrategy`` for a name no strategy has (whether it runs here is checked later)."""
    known = [s.name for s in all_strategies()]
    for name in names or []:
        if name not in known:
            raise UnknownStrategy(name, known)


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
    if args.strategy is not None:
        _check_strategy(config, args.strategy)
    with sessions.begin() as session:
        write_settings(session, strategy=args.strategy, business_delay_ms=args.business_delay_ms)
        empty = session.scalar(select(Product.id).limit(1)) is None
    if args.reset or empty:
        reset_products(sessions)


def _describe_db(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _raise_on_sigterm() -> None:
    # SIGTERM takes the same clean path as Ctrl-C: stop every instance.
    def handler(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)


def _names(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    return [n.strip() for n in raw.split(",") if n.strip()]

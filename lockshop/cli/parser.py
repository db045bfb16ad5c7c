"""The ``lockshop`` command's arguments: every command, its options, and their checks."""

from __future__ import annotations

import argparse
from pathlib import Path

from lockshop.cli import commands
from lockshop.cli.compose import add_compose_parser
from lockshop.cli.exercise import add_exercise_parser
from lockshop.cli.language import ArgumentParser
from lockshop.cli.sandbox_check import add_sandbox_parser
from lockshop.cli.your_lock import add_lock_option
from lockshop.cluster.scratch import DEFAULT_SERVERS
from lockshop.console import CONTROL_PORT
from lockshop.room import cgroups
from lockshop.room.codes import CODE_ALPHABET, is_code
from shop.i18n import _
from shop.store.settings import JOB_GUARDS, MAX_BUSINESS_DELAY_MS, MAX_JOB_MS

DEFAULT_RUNTIME_DIR = Path(".lockshop")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="lockshop", description=_("A shop that shows which locking strategies oversell."))
    parser.add_argument("--database-url", help=_("overrides LOCKSHOP_DATABASE_URL "
                                                 "(default: sqlite:///.lockshop/lockshop.db)"))
    parser.add_argument("--lang", metavar="LANG", help=_(
        "the language to speak: en or zh_CN, anywhere on the line (default: from LANGUAGE, "
        "LC_ALL, LC_MESSAGES or LANG)"))
    subcommands = parser.add_subparsers(title=_("commands"), required=True, metavar="COMMAND")

    up = subcommands.add_parser("up", help=_("start N instances on one database until Ctrl-C"))
    up.add_argument("--instances", type=positive, default=3,
                    help=_("how many instances (default 3)"))
    up.add_argument("--port", type=port_number, default=8000,
                    help=_("first port (default 8000)"))
    up.add_argument("--host", default="127.0.0.1", help=_("bind address (default 127.0.0.1)"))
    up.add_argument("--threads", type=positive, default=16, help=_("threads per instance"))
    up.add_argument("--strategy", help=_("switch the cluster to this strategy at start"))
    up.add_argument("--business-delay-ms", type=delay,
                    help=_("set the business delay at start"))
    up.add_argument("--reset", action="store_true",
                    help=_("restore the default products at start"))
    up.add_argument("--control-port", type=port_number, help=_(
        "the console's control (labs, faults, sales) and the room (default %(port)s, or a "
        "free port if it is taken)", port=CONTROL_PORT))
    up.add_argument("--room-code", type=room_code, help=_(
        "the code students type to join the room (default: the one kept in the runtime "
        "folder, else a new one)"))
    up.add_argument("--gradings", type=positive, help=_(
        "how many of the room's checks run at once (default: the cores, plus one)"))
    up.add_argument("--room-without-limits", action="store_true", help=_(
        "open the room even where its sandbox cannot enforce memory, process and total CPU "
        "time limits (no writable cgroups): a student's program may then take this machine "
        "down; the room guide says when that is acceptable"))
    up.add_argument("--cgroup-root", type=Path, default=cgroups.CGROUPS, help=_(
        "where the sandbox finds the cgroups it limits gradings with (default %(default)s)"))
    up.add_argument("--runtime-dir", type=Path, default=DEFAULT_RUNTIME_DIR,
                    help=_("where the instances' logs and the console's runs go "
                           "(default %(default)s)"))
    up.add_argument("--hosts", action="store_true",
                    help=_("each instance and server on a host of its own (a network "
                           "namespace, as root), so the console can cut links between them"))
    up.add_argument("--database", choices=("configured", "postgresql"), default="configured",
                    help=_("postgresql: on a PostgreSQL server of its own (on host "
                           "\"postgres\" with --hosts), which the console can stop, start and "
                           "cut off; thrown away on exit (default: LOCKSHOP_DATABASE_URL, or "
                           "SQLite)"))
    up.set_defaults(run=commands.cmd_up)
    add_lock_option(up, commands.cmd_up, stand_in=False)

    demo = subcommands.add_parser(
        "demo", help=_("run a flash sale per strategy and print the table"))
    demo.add_argument("--instances", type=positive, default=3)
    demo.add_argument("--users", type=positive, default=24, help=_("Locust users per run"))
    demo.add_argument("--run-time", type=positive, default=8,
                      help=_("seconds each sale stays open, once every buyer is in"))
    demo.add_argument("--business-delay-ms", type=delay, default=20)
    demo.add_argument("--strategies",
                      help=_("comma-separated names (default: every available one)"))
    demo.add_argument("--keep", action="store_true", help=_("keep the runtime folder (logs, CSV)"))
    add_database_options(demo)
    demo.set_defaults(run=commands.cmd_demo)

    lab = subcommands.add_parser(
        "lab", help=_("stage one lesson of the articles: the failure, then the fix, step by step"))
    lab.add_argument("name", help=_("a lab's id (C11) or name (redis_plain_del); 'list' lists "
                       "them, 'all' runs them all"))
    lab.add_argument("--article", help=_("with 'all' or 'list': only this article's (A0..A4)"))
    lab.add_argument("--json", action="store_true", help=_("print each lab's record as JSON"))
    lab.add_argument("--repeat", type=positive, default=1,
                     help=_("run the labs this many times and tally each (a soak: 10)"))
    lab.add_argument("--source", action="store_true",
                     help=_("print where the lab is staged (file:line) and its code"))
    lab.set_defaults(run=commands.cmd_lab)
    add_lock_option(lab, commands.cmd_lab, stand_in=True)

    add_exercise_parser(subcommands, positive)
    add_compose_parser(subcommands)
    add_sandbox_parser(subcommands)

    soak = subcommands.add_parser(
        "soak", help=_("each correct strategy under load and seeded network faults, on hosts "
                       "(root); print orders, faults, overlaps, oversold, duplicates, 5xx"))
    soak.add_argument("--minutes", type=minutes, default=10.0, help=_("per strategy (default 10)"))
    soak.add_argument("--seed", type=whole_number, default=1,
                      help=_("of the fault schedule: the same seed, the same faults"))
    soak.add_argument("--buyers", type=positive, default=12, help=_("concurrent buyers"))
    soak.add_argument("--strategies", help=_("comma-separated names (default: every correct "
                                              "one that runs here)"))
    soak.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite",
                      help=_("where each strategy keeps its data: a SQLite file, or a PostgreSQL "
                             "server of the soak's own on a host that faults may cut off and "
                             "restart (pg_advisory soaks there either way)"))
    soak.add_argument("--json", type=Path, help=_("also write the figures to this file"))
    soak.set_defaults(run=commands.cmd_soak)

    report = subcommands.add_parser("report", help=_(
        "run every strategy through the scenarios; write report.md, report.html, charts, "
        "Locust files, JSON"))
    report.add_argument("--output", type=Path, default=Path("report"))
    report.add_argument("--instances", type=positive, default=3)
    report.add_argument("--users", type=positive, default=24)
    report.add_argument("--run-time", type=positive, default=8,
                        help=_("seconds each sale stays open, once every buyer is in"))
    report.add_argument("--business-delay-ms", type=delay, default=20)
    report.add_argument("--strategies",
                        help=_("comma-separated names (default: every usable one)"))
    report.add_argument("--scenarios",
                        help=_("comma-separated: flash_sale, seat_sale (default: both)"))
    add_database_options(report)
    report.set_defaults(run=commands.cmd_report)

    bench = subcommands.add_parser(
        "bench", help=_("measure strategies; print and write the figures"))
    bench.add_argument("family", choices=["shop", "database", "redis", "zookeeper"],
                       help=_("what to measure: the shop's own cost per order, or a family"))
    bench.add_argument("--databases", default="sqlite,postgresql,mysql",
                       help=_("comma-separated: sqlite, postgresql, mysql (default: all three)"))
    bench.add_argument("--postgres-url", default=DEFAULT_SERVERS["postgresql"],
                       help=_("an admin URL; the benchmark creates and drops its own database"))
    bench.add_argument("--mysql-url", default=DEFAULT_SERVERS["mysql"])
    bench.add_argument("--strategies", help=_("comma-separated names (default: the family's)"))
    bench.add_argument("--instances", type=positive, default=3)
    bench.add_argument("--users", type=positive, default=24)
    bench.add_argument("--connections", type=positive, default=16,
                       help=_("shop: the closed loop's connections (default: 16)"))
    bench.add_argument("--run-time", type=positive, default=None,
                       help=_("seconds per run (default: 6 for database, 3 for the others)"))
    bench.add_argument("--business-delay-ms", type=delay, default=0)
    bench.add_argument("--output", type=Path,
                       help=_("JSON file (default: bench-results/<family>.json)"))
    bench.set_defaults(run=commands.cmd_bench)

    audit = subcommands.add_parser(
        "audit", help=_("print the audit; exit 1 if it is not correct"))
    audit.add_argument("--url", help=_("ask this instance instead of the database"))
    audit.add_argument("--json", action="store_true", help=_("print JSON"))
    audit.set_defaults(run=commands.cmd_audit)

    reset = subcommands.add_parser(
        "reset", help=_("delete all orders and restore the default products"))
    reset.set_defaults(run=commands.cmd_reset)

    settings = subcommands.add_parser("settings", help=_("show or change the cluster's settings"))
    settings.add_argument("--strategy")
    settings.add_argument("--business-delay-ms", type=delay)
    settings.add_argument("--job-guard", choices=JOB_GUARDS,
                          help=_("what guards the scheduled jobs"))
    for name in ("job-interval-ms", "unpaid-expiry-ms", "reminder-after-ms"):
        settings.add_argument(f"--{name}", type=job_ms)
    settings.set_defaults(run=commands.cmd_settings)

    strategies = subcommands.add_parser("strategies", help=_("list the strategies"))
    strategies.set_defaults(run=commands.cmd_strategies)
    return parser


def add_database_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--database", choices=["sqlite", "postgresql", "mysql"],
                         default="sqlite", help=_(
                             "run on a scratch database of this machine's PostgreSQL or "
                             "MariaDB server (default: a fresh SQLite file)"))
    command.add_argument("--server-url", help=_(
        "the admin URL of that server (default: postgresql://postgres@127.0.0.1:5432/postgres, "
        "mysql://root@127.0.0.1:3306/)"))


# --- argument types ------------------------------------------------------------

def minutes(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(_("must be a number of minutes, got %(raw)r",
                                           raw=raw)) from None
    if not 0.5 <= value <= 600:
        raise argparse.ArgumentTypeError(_("must be between 0.5 and 600 minutes, got %(raw)s",
                                           raw=raw))
    return value


def positive(raw: str) -> int:
    value = whole_number(raw)
    if value < 1:
        raise argparse.ArgumentTypeError(_("must be at least 1, got %(value)s", value=value))
    return value


def port_number(raw: str) -> int:
    value = whole_number(raw)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(_("not a port: %(value)s", value=value))
    return value


def room_code(raw: str) -> str:
    code = raw.strip().upper()
    if not is_code(code):
        raise argparse.ArgumentTypeError(_(
                "a room code is 4 to 16 of these letters and digits: %(alphabet)s",
                alphabet=CODE_ALPHABET))
    return code


def delay(raw: str) -> int:
    value = whole_number(raw)
    if not 0 <= value <= MAX_BUSINESS_DELAY_MS:
        raise argparse.ArgumentTypeError(_("must be 0 to %(max)s ms, got %(value)s",
                                           max=MAX_BUSINESS_DELAY_MS, value=value))
    return value


def job_ms(raw: str) -> int:
    value = whole_number(raw)
    if not 0 <= value <= MAX_JOB_MS:
        raise argparse.ArgumentTypeError(_("must be 0 to %(max)s ms, got %(value)s",
                                           max=MAX_JOB_MS, value=value))
    return value


def whole_number(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(_("not a whole number: %(raw)r", raw=raw)) from None

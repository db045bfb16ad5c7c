"""``lockshop compose check``: docker-compose.yml built and run for real (``lockshop.compose``).

Exit codes: 0 every step passed; 1 a step ran and its result was wrong; 2 it could not
run (no Docker to be had, a daemon that cannot start, a port taken, a build that failed,
another check running), said in one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import lockshop
from lockshop.cli.commands import CliError
from shop.config import Config
from shop.i18n import _


def add_compose_parser(subcommands) -> None:
    compose = subcommands.add_parser("compose", help=_(
        "build and run docker-compose.yml for real and check it (root; installs Docker)"))
    compose.add_argument("action", choices=["check"], help=_(
        "check: every image built, the cluster run and sold through, then the workshop "
        "container; each step timed"))
    compose.set_defaults(run=cmd_compose)


def cmd_compose(args: argparse.Namespace, config: Config) -> int:
    from lockshop.compose.check import run_check
    from lockshop.compose.engine import EngineError

    try:
        return run_check(Path(lockshop.__file__).resolve().parent.parent)
    except EngineError as error:
        raise CliError(str(error)) from None

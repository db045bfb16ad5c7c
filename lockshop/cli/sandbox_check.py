"""``lockshop sandbox check-v2``: the room's sandbox, checked on a real cgroup v2 kernel in
a VM (``lockshop.room.check_v2``). Exit 0 when every limit held, 1 when one did not, 2
when the check could not run."""

from __future__ import annotations

import argparse
from pathlib import Path

from shop.config import Config
from shop.i18n import _


def add_sandbox_parser(subcommands) -> None:
    sandbox = subcommands.add_parser("sandbox", help=_(
        "check the room's sandbox: check-v2 boots a cgroup v2 kernel in a VM and runs the "
        "hostile gradings there (minutes; root)"))
    sandbox.add_argument("action", choices=("check-v2",))
    sandbox.add_argument("--cache", type=Path, help=_(
        "where the VM's root is built and kept (default ~/.cache/lockshop/cgroup-v2-vm)"))
    sandbox.set_defaults(run=cmd_sandbox)


def cmd_sandbox(args: argparse.Namespace, config: Config) -> int:
    from lockshop.room import check_v2

    return check_v2.main(args.cache)

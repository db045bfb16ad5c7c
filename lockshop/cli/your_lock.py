"""``--lock FILE[:Class]``: a lock of your own wherever a strategy goes.

``lockshop up --lock token_lock.py`` adds it to the cluster's strategies (the
console's sale, lock view and timeline show it at work); ``lockshop lab C11
--lock token_lock.py`` runs the lab with it standing in for the fix half's
lock of its family, through the very steps the project's fix passes.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import replace

from locks.custom import (
    LockClassError,
    absolute_target,
    load_lock_class,
    register_spec,
    split_spec,
)
from lockshop.cli.commands import CliError
from shop.config import PREFIX, Config
from shop.i18n import _
from shop.i18n.lock_errors import say_class_error


def add_lock_option(parser: argparse.ArgumentParser, command, *, stand_in: bool) -> None:
    parser.add_argument("--lock", metavar="FILE[:Class]", help=_(
        "your lock class (FILE[:Class] or package.module:Class), standing in for the fix "
        "half's lock") if stand_in else _("your lock class (FILE[:Class] or "
                                          "package.module:Class) as a strategy"))
    parser.set_defaults(run=_with_lock(command, stand_in))


def _with_lock(command, stand_in: bool):
    def run(args: argparse.Namespace, config: Config) -> int:
        if not args.lock:
            return command(args, config)
        named = _named_spec(args.lock)
        # The instances (other processes) register it from their configuration; this
        # process (the labs, the console) from the same line.
        os.environ[PREFIX + "EXTRA_LOCKS"] = ",".join((*config.extra_locks, named))
        config = replace(config, extra_locks=(*config.extra_locks, named))
        try:
            strategy = register_spec(named)
        except LockClassError as error:
            raise CliError(say_class_error(error)) from None
        print(_("your lock is the strategy %(name)s (%(lock)s)", name=strategy.name,
                lock=args.lock), flush=True)
        if not stand_in:
            return command(args, config)
        from lockshop.workshop.staging.stage import standing_in
        with standing_in(strategy.name):
            return command(args, config)
    return run


def _named_spec(spec: str) -> str:
    """``my_<class in snake case>=<absolute path>:<Class>``, checked now, so that a bad
    file is one line here and not a failure in every instance."""
    try:
        lock_class = load_lock_class(spec)
    except LockClassError as error:
        raise CliError(say_class_error(error)) from None
    target, class_name = split_spec(spec)
    target = absolute_target(target)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", lock_class.__name__).lower()
    return f"my_{snake}={target}:{class_name or lock_class.__name__}"

"""The ``lockshop`` command: run the cluster, the demo, the labs, the audit.

Errors end with one readable line on stderr and a non-zero exit:
2 for bad input or a failed start, 1 for an audit that is not correct.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sqlalchemy.exc import SQLAlchemyError

from locks import UnknownStrategy
from lockshop.cli.commands import CliError
from lockshop.cli.parser import build_parser
from lockshop.cluster.client import ShopClientError
from lockshop.cluster.processes import StartError
from shop.config import Config, ConfigError
from shop.errors import ShopError


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = Config.from_env(**_overrides(args))
        return args.run(args, config)
    except KeyboardInterrupt:
        return 130
    except (CliError, ConfigError, ShopClientError, ShopError, StartError, UnknownStrategy,
            SQLAlchemyError, OSError, ValueError) as error:
        print(f"lockshop: error: {_one_line(error)}", file=sys.stderr)
        return 2


def _overrides(args) -> dict:
    return {"database_url": args.database_url} if args.database_url else {}


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__

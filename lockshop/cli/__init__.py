"""The ``lockshop`` command: run the cluster, the demo, the labs, the audit.

Errors end with one readable line on stderr and a non-zero exit:
2 for bad input or a failed start, 1 for an audit that is not correct.
It speaks the language of ``--lang`` or of the environment (``lockshop.cli.language``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from sqlalchemy.exc import SQLAlchemyError

from locks import UnknownStrategy
from lockshop.cli.commands import CliError
from lockshop.cli.language import choose_language
from lockshop.cli.parser import build_parser
from lockshop.cluster.client import ShopClientError
from lockshop.cluster.processes import StartError
from shop.config import Config, ConfigError
from shop.errors import ShopError
from shop.i18n import _


def main(argv: Sequence[str] | None = None) -> int:
    argv, language_problem = choose_language(sys.argv[1:] if argv is None else argv, os.environ)
    parser = build_parser()
    if language_problem:
        parser.error(language_problem)
    args = parser.parse_args(argv)
    try:
        config = Config.from_env(**_overrides(args))
        code = args.run(args, config)
        sys.stdout.flush()  # a reader that went away (| head) is found here, not at exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Said nothing more, as cat and grep do; stdout points nowhere so that Python's
        # own flush at exit does not complain either (the recipe of Python's signal docs).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (CliError, ConfigError, ShopClientError, ShopError, StartError, UnknownStrategy,
            SQLAlchemyError, OSError, ValueError) as error:
        # argparse's own error line, so that both kinds read alike in every language
        print(_("%(prog)s: error: %(message)s\n", prog="lockshop", message=_one_line(error)),
              end="", file=sys.stderr)
        return 2


def _overrides(args) -> dict:
    return {"database_url": args.database_url} if args.database_url else {}


def _one_line(error: BaseException) -> str:
    if isinstance(error, UnknownStrategy):  # from locks/, which speaks English only
        return _("unknown strategy '%(name)s'; known: %(known)s", name=error.name,
                 known=", ".join(error.known))
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__

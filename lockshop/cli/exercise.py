"""``lockshop exercise list | start ID [DIR] | check ID FILE[:Class]``.

Exit codes: 0 every check passed (or the list/start worked); 1 a check failed;
2 bad input (an unknown exercise, a file that exists, a lock file that does
not import or has no lock class), said in one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
from pathlib import Path

import requests

from locks.custom import LockClassError
from lockshop.cli.commands import CliError
from lockshop.invoked import lockshop_command
from shop.config import Config
from lockshop.exercises.skeleton_text import skeleton_text
from shop.i18n import _, current_language
from shop.i18n.lock_errors import say_class_error


def cmd_exercise(args: argparse.Namespace, config: Config) -> int:
    from lockshop.exercises import registry as exercises

    if args.action == "list":
        return _list(exercises, args.json)
    if not args.id:
        raise CliError(_("'%(lockshop)s exercise %(action)s' needs an exercise's number; "
                         "'%(lockshop)s exercise list' lists them", action=args.action,
                         lockshop=lockshop_command()))
    try:
        exercise = exercises.find(args.id)
    except KeyError:
        raise CliError(_("no exercise %(id)r; '%(lockshop)s exercise list' lists them",
                         id=args.id, lockshop=lockshop_command())) from None
    if args.action == "start":
        return _start(exercise, Path(args.target or "."))
    if args.reference:
        args.target = reference_lock(exercise)
    if not args.target:
        raise CliError(_("'%(lockshop)s exercise check %(id)s' needs your lock's file: "
                         "%(lockshop)s exercise check %(id)s %(file)s", id=exercise.id,
                         file=exercise.file, lockshop=lockshop_command()))
    return _check(exercise, args)


def reference_lock(exercise) -> str:
    """``module:Class`` of the project's own lock (or guard, or order step, or election) that
    does what ``exercise`` asks: a strategy's name, or named as it is loaded."""
    if ":" in exercise.reference:  # a job guard, an order step or an election is no strategy
        return exercise.reference
    import locks
    factory = locks.get(exercise.reference).factory
    module, _colon, factory_class = factory.partition(":")
    lock_class = getattr(importlib.import_module(module), factory_class).lock_class
    return f"{lock_class.__module__}:{lock_class.__name__}"


def _list(exercises, as_json: bool) -> int:
    if as_json:
        print(json.dumps(exercises.listing(), ensure_ascii=False))
        return 0
    for exercise in exercises.EXERCISES.values():
        print(f"{exercise.id:>2}  {exercise.title}")
        print("    " + _("%(family)s  lessons %(lessons)s  articles %(articles)s",
                        family=exercise.backend, lessons=" ".join(exercise.lessons),
                        articles=", ".join(exercise.articles)))
    print("\n" + _("%(lockshop)s exercise start N writes exercise N's skeleton; "
                   "%(lockshop)s exercise check N FILE grades it.", lockshop=lockshop_command()))
    return 0


def _start(exercise, folder: Path) -> int:
    if not folder.is_dir():
        raise CliError(_("%(folder)s: no such folder", folder=folder))
    target = folder / exercise.file
    if target.exists():
        raise CliError(_("%(target)s exists already: not overwriting your work (remove it, "
                         "or start in another folder)", target=target))
    target.write_text(skeleton_text(exercise, current_language()), encoding="utf-8")
    print(_("wrote %(target)s", target=target))
    print(_("fill in its TODOs, then check it: %(lockshop)s exercise check %(id)s %(target)s",
            id=exercise.id, target=target, lockshop=lockshop_command()))
    return 0


def _check(exercise, args) -> int:
    from lockshop.exercises import grader
    from lockshop.exercises.results import Rounds

    # The grader kills and pauses holders on purpose: the client libraries' warnings
    # about it would drown the checks that explain it.
    for name in ("kazoo", "locks", "lockshop"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    say = (lambda _: None) if args.json else (lambda line: print(line, flush=True))
    rounds = Rounds([])
    host = None
    try:
        if grader.out_of_process(exercise):
            # One process of the student's lock for every round, as one grader's.
            host = grader.start_host(args.target, exercise)
        for number in range(1, args.repeat + 1):
            if args.repeat > 1:
                say("--- " + _("round %(number)s of %(rounds)s", number=number,
                               rounds=args.repeat))
            graded = grader.grade(exercise, args.target, say=say, host=host)
            say(graded.summary())
            rounds.grades.append(graded)
    except LockClassError as error:
        raise CliError(say_class_error(error)) from None
    finally:
        if host is not None:
            host[0].close()
    if args.repeat > 1:
        say(rounds.tally())
        say(rounds.said())
    if args.json:
        print(json.dumps(rounds.as_json(), ensure_ascii=False))
    if args.gradescope:
        Path(args.gradescope).write_text(json.dumps(rounds.gradescope(), indent=2,
                                                    ensure_ascii=False))
        say(_("wrote %(file)s (Gradescope's results.json)", file=args.gradescope))
    if args.report:
        say(_report(args, rounds))
    return 0 if rounds.passed else 1


def _report(args, rounds) -> str:
    """Post the verdict of every round to the instructor's room board (``lockshop up``'s
    control)."""
    if not args.name:
        raise CliError(_("--report needs --name (how the board shows you)"))
    url = args.report.rstrip("/") + "/control/room/results"
    try:
        answer = requests.post(url, json=rounds.board_post(args.name),
                               headers={"X-Room-Code": args.room or ""}, timeout=10)
    except requests.RequestException as error:
        raise CliError(_("could not post to the room board at %(url)s: %(error)s", url=url,
                         error=error)) from None
    if answer.status_code == 401:
        raise CliError(_("the room board refused the room code: ask your instructor for it "
                         "(--room CODE)"))
    if answer.status_code >= 400:
        raise CliError(_("the room board said %(status)s: %(text)s", status=answer.status_code,
                         text=answer.text.strip()[:200]))
    return _("posted to the room board at %(url)s as %(name)s", url=args.report, name=args.name)


def add_exercise_parser(subcommands, positive) -> None:
    """The ``exercise`` command; ``positive`` is the parser's own check of a count."""
    exercise = subcommands.add_parser(
        "exercise", help=_("write a lock yourself: list the exercises, start one, check it"))
    exercise.add_argument("action", choices=("list", "start", "check"))
    exercise.add_argument("id", nargs="?", help=_("the exercise's number (see 'list')"))
    exercise.add_argument("target", nargs="?",
                          help=_("start: the folder to write into (default: here); check: your "
                                 "lock, FILE[:Class] or package.module:Class"))
    exercise.add_argument("--repeat", type=positive, default=1,
                          help=_("run the whole check this many times and count each check's "
                                 "passes (9 of 10 is a fail)"))
    exercise.add_argument("--reference", action="store_true",
                          help=_("check: grade the project's own lock for this exercise (to try "
                                 "the grader on a machine before a workshop)"))
    exercise.add_argument("--json", action="store_true", help=_("print one JSON record"))
    exercise.add_argument("--gradescope", metavar="FILE",
                          help=_("write Gradescope's results.json there"))
    exercise.add_argument("--report", metavar="URL",
                          help=_("post the result to the room board of the instructor's "
                                 "'lockshop up' (its control URL)"))
    exercise.add_argument("--name", help=_("with --report: your name on the board"))
    exercise.add_argument("--room", help=_("with --report: the room code 'lockshop up' printed"))
    exercise.set_defaults(run=cmd_exercise)

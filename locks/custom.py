"""A lock class from a file, plugged in as a strategy: a student's, or anyone's.

``load_lock_class("token_lock.py:TokenLock")`` imports the file and hands back
the class (``package.module:Class`` works too, and the class may be left out
when the file defines exactly one lock class). ``register_lock("mine", cls)``
adds it to the strategies, so the shop, the labs and the console can use it
like any other: the backend it needs is read off the base class it extends.

Every way a file can be wrong (missing, a syntax error, an import that fails,
no lock class, two of them) is one ``LockClassError`` whose message names the
file and, where there is one, the line: a student reads one line, not a
traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from pathlib import Path

from .base import DistributedLock
from .registry import LockFactory, Strategy, get, names, register

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LockClassError(ValueError):
    """The file or module named cannot give a lock class; the message says where."""


def split_spec(spec: str) -> tuple[str, str | None]:
    """``FILE[:Class]`` or ``package.module:Class`` -> (file or module, class or None)."""
    target, colon, name = spec.rpartition(":")
    if colon and _IDENTIFIER.match(name) and target:
        return target, name
    return spec, None


def is_file(target: str) -> bool:
    """Whether ``target`` (a spec's part before the class) names a file, not a module."""
    return target.endswith(".py") or "/" in target or Path(target).exists()


def absolute_target(target: str) -> str:
    """``target`` as another process, in another folder, can load it: a file's absolute
    path, a module's name as it is."""
    return str(Path(target).resolve()) if is_file(target) else target


def load_lock_class(spec: str) -> type[DistributedLock]:
    """The lock class ``spec`` names; ``LockClassError`` saying why when there is none.

    A read/write lock's file has two: the write lock, which names its read half in
    ``read_lock_class``, and that read half, which is not counted as a lock of its own."""
    return load_class(spec, DistributedLock, "lock class",
                      halves=lambda found: {getattr(c, "read_lock_class", None)
                                            for c in found})


def load_election_class(spec: str) -> type:
    """The leader election class ``spec`` names (a ``locks.zk_election.Candidate``):
    the shop's job guard ``leader`` runs with it in place of its own
    (``Config.election``); ``LockClassError`` saying why when there is none."""
    from .zk_election import Candidate
    return load_class(spec, Candidate, "leader election class")


def load_class(spec: str, base: type, kind: str, halves=lambda found: set()) -> type:
    """The subclass of ``base`` that ``spec`` names (a ``kind``: "lock class"), or the only
    one its file defines, leaving out the classes ``halves(found)`` says belong to another."""
    target, class_name = split_spec(spec)
    module = _import(target)
    where = getattr(module, "__file__", None) or target
    found = {name: value for name, value in vars(module).items()
             if inspect.isclass(value) and issubclass(value, base)
             and value.__module__ == module.__name__}
    found = {name: value for name, value in found.items()
             if value not in halves(found.values())}
    if class_name is not None:
        value = getattr(module, class_name, None)
        if value is None:
            raise LockClassError(f"{where}: has no class {class_name}"
                                 + (f" (its {kind}es: {', '.join(found)})" if found else ""))
        if not (inspect.isclass(value) and issubclass(value, base)):
            raise LockClassError(f"{where}: {class_name} is not a {kind} (a subclass of "
                                 f"{base.__name__})")
        return value
    if not found:
        raise LockClassError(f"{where}: has no {kind} (a subclass of {base.__name__})")
    if len(found) > 1:
        raise LockClassError(f"{where}: has {len(found)} {kind}es ({', '.join(found)}): "
                             f"name one, as {target}:{next(iter(found))}")
    return next(iter(found.values()))


def import_target(target: str):
    """The module ``target`` names (a file, or ``package.module``); ``LockClassError``
    saying why when it cannot be imported. For what a file gives that is not a class
    (an order step may be a function: ``shop.orders.custom_steps``)."""
    return _import(target)


def _import(target: str):
    if is_file(target):
        return _import_file(Path(target))
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        if error.name and target.startswith(error.name):
            raise LockClassError(f"{target}: no such file or module") from None
        raise LockClassError(_where_it_failed(error, target)) from None
    except SyntaxError as error:
        raise LockClassError(_syntax(error)) from None
    except Exception as error:  # noqa: BLE001 - any failure of the student's import
        raise LockClassError(_where_it_failed(error, target)) from None


def _import_file(path: Path):
    if not path.is_file():
        raise LockClassError(f"{path}: no such file")
    path = path.resolve()
    name = "lockshop_custom_" + re.sub(r"\W", "_", str(path))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as error:
        del sys.modules[name]
        raise LockClassError(_syntax(error)) from None
    except Exception as error:  # noqa: BLE001 - any failure of the student's file
        del sys.modules[name]
        raise LockClassError(_where_it_failed(error, str(path))) from None
    return module


def _syntax(error: SyntaxError) -> str:
    return f"{error.filename}:{error.lineno}: syntax error: {error.msg}"


def _where_it_failed(error: BaseException, target: str) -> str:
    """``file:line: Error: message`` at the deepest frame of the student's own file."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if Path(f.filename).name == Path(target).name] or frames[-1:]
    place = f"{mine[-1].filename}:{mine[-1].lineno}" if mine else target
    return f"{place}: {type(error).__name__}: {error}"


# --- a lock class as a strategy ---------------------------------------------------------

def factory_for(lock_class: type[DistributedLock]) -> tuple[type[LockFactory], tuple[str, ...]]:
    """The factory a lock class needs, by the base it extends, and the backends it needs."""
    from .redis_support import RedisFactory, RedisLockBase
    if issubclass(lock_class, RedisLockBase):
        return _factory(lock_class, RedisFactory), ("redis",)
    from .zk_queue import QueueFactory, QueueLockBase
    from .zk_session import ZooKeeperFactory, ZooKeeperLockBase
    if issubclass(lock_class, QueueLockBase):
        return _factory(lock_class, QueueFactory), ("zookeeper",)
    if issubclass(lock_class, ZooKeeperLockBase):
        return _factory(lock_class, ZooKeeperFactory), ("zookeeper",)
    from .table_lock import TableLock, TableLockFactory
    if issubclass(lock_class, TableLock):
        return _factory(lock_class, TableLockFactory), ("database",)
    from .redlock import RedlockBase, RedlockFactory
    if issubclass(lock_class, RedlockBase):
        return _factory(lock_class, RedlockFactory), ("redlock",)
    raise LockClassError(f"{lock_class.__name__} extends neither a Redis nor a ZooKeeper lock "
                         "base: lockshop cannot tell which server it needs")


def _factory(lock_class, base: type[LockFactory]) -> type[LockFactory]:
    """``base`` making ``lock_class``; and its ``read_lock_class``, when it names one (a
    read/write lock's write half names its read half), for readers, who share it."""
    members = {"lock_class": lock_class}
    reader = getattr(lock_class, "read_lock_class", None)
    if reader is not None:
        def read_lock(self, name: str, *, timeout: float = 5.0, label: str | None = None):
            return reader(name, strategy=label or self.strategy.name, timeout=timeout,
                          **self.lock_arguments())
        members.update(shared_reads=True, read_lock=read_lock)
    return type(f"{lock_class.__name__}Factory", (base,), members)


def register_lock(name: str, lock_class: type[DistributedLock], *, source: str = "") -> Strategy:
    """Add ``lock_class`` as the strategy ``name`` (again, if the same source asks twice)."""
    factory, requires = factory_for(lock_class)
    summary = f"Your lock: {source or lock_class.__name__}."
    if name in names():
        known = get(name)
        if known.summary == summary:
            return known
        raise LockClassError(f"strategy {name!r} is already registered")
    return register(Strategy(name=name, family="custom", summary=summary,
                             correct_across_instances=True, factory="", requires=requires,
                             factory_class=factory))


def register_spec(named_spec: str) -> Strategy:
    """``name=FILE[:Class]`` (as ``LOCKSHOP_EXTRA_LOCKS`` holds it) as a strategy."""
    name, equals, spec = named_spec.partition("=")
    if not equals or not _IDENTIFIER.match(name):
        raise LockClassError(f"{named_spec!r}: expected name=FILE[:Class]")
    return register_lock(name, load_lock_class(spec), source=spec)

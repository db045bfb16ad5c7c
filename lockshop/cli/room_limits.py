"""Whether ``lockshop up`` may open the room: its sandbox's limits, enforced or said.

The room runs students' code. Its memory, process and total CPU time limits hold only
through cgroups (v1 or v2, ``lockshop.room.cgroups``); rlimits and the wall clock hold
without them. Where no cgroup can be written, ``up`` stops before starting anything and
says which limits would not hold and why, unless ``--room-without-limits`` says to open
the room anyway: then ``up`` prints it, and the console shows it to every reader. Where
no grading can run at all (``up`` not run as root, bwrap, setpriv or prlimit missing),
``up`` stops so too, in one line, unless told the same: then the room opens, and each
check says why it is not graded.
"""

from __future__ import annotations

import os
from pathlib import Path

from lockshop.room import cgroups, sandbox
from shop.i18n import _, lazy_gettext


def room_limits(cgroup_root: Path) -> cgroups.Support:
    """What the room's sandbox can enforce here, with its cgroups under ``cgroup_root``."""
    cgroups.use(cgroup_root)
    if os.geteuid() != 0:
        return cgroups.Support(None, cgroup_root, lazy_gettext(
            "the sandbox needs root: it binds what root can read, then runs the student's "
            "code as nobody"), grades=False)
    missing = sandbox.missing_tools()
    if missing:
        return cgroups.Support(None, cgroup_root, lazy_gettext(
            "missing %(tools)s (Debian packages bubblewrap, util-linux; ./run installs them)",
            tools=", ".join(missing)), grades=False)
    return cgroups.probe()


def refusal(support: cgroups.Support) -> str:
    """Why ``up`` does not open this room, in one line: what does not hold, why, and what
    to do."""
    if not support.grades:
        return _("the room cannot grade on this machine (%(why)s); run up as root where "
                 "bubblewrap and util-linux are installed, or run again with "
                 "--room-without-limits to open the room anyway, every check then refused",
                 why=support.problem)
    return _(
        "the room's sandbox cannot enforce its %(limits)s limits on this machine (%(why)s), "
        "so a student's program could take it down; give lockshop writable cgroups (the "
        "room guide says how), or run again with --room-without-limits to open the room "
        "anyway", limits=unenforced_limits(support), why=support.problem)


def unenforced_limits(support: cgroups.Support) -> str:
    """The limits that do not hold, in the current language: all the cgroups' or none."""
    return _("memory, process and total CPU time") if support.unenforced else ""


def say_room_limits(support: cgroups.Support) -> None:
    """A line under ``up``'s addresses when the room opened without its limits."""
    if support.problem and not support.grades:
        print("  " + _("the room opened, but it grades nothing here (--room-without-limits): "
                       "%(why)s", why=support.problem))
    elif support.problem:
        print("  " + _("the room opened WITHOUT its %(limits)s limits (--room-without-limits): "
                       "%(why)s", limits=unenforced_limits(support), why=support.problem))

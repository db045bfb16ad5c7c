"""The control's HTTP face: what the console's instructor buttons call.

One blueprint per concern, each declaring who may use it: reading is open (a
student's console reads the same state), acting needs the admin token, as the
shop's admin API does; a student's result needs the room code instead. The room's
own blueprints (``lockshop.room``: its page at ``/room/``, its API at ``/room/api/``)
are served by the same app, at the room's address. Every
answer carries CORS headers: the console's page comes from a shop instance, on
another port. Every refusal is ``{"error": ..., "message": ...}`` with its status.

    owner.py          Control: the launcher's parts, the runners, the room, the state
    faults.py         what the instructor's buttons do to instances, servers and links
    web.py            the plumbing: the app, CORS, refusals as JSON, the admin token
    cluster.py        /control/state, /control/instances, /control/servers, /control/network
    labs.py           /control/labs
    sales.py          /control/sales
    hold_timeline.py  /control/holds: who held which lock when, and the overlaps
    room.py           /control/exercises, /control/room
    handbook.py       /handbook/
    limits.py         the largest body each path takes (capped at lockshop's front door)
"""

from __future__ import annotations

from flask import Flask

from lockshop.console.control import web
from lockshop.console.control.cluster import cluster
from lockshop.console.control.handbook import handbook
from lockshop.console.control.hold_timeline import hold_timeline
from lockshop.console.control.labs import labs
from lockshop.console.control.owner import Control
from lockshop.console.control.room import room
from lockshop.console.control.sales import sales
from lockshop.room import api as room_api
from lockshop.room import page as room_page

BLUEPRINTS = [cluster, labs, sales, hold_timeline, room, handbook]


def control_app(control: Control) -> Flask:
    """The control's Flask app, answering for ``control``, and the room's page and API."""
    app = web.control_app(control, [*BLUEPRINTS, room_page.page])
    room_api.serve(app, control.room)  # behind the control's token (web.control_app)
    return app


__all__ = ["BLUEPRINTS", "Control", "control_app"]

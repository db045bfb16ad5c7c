"""The workshop console, all of it: a page on every instance, a control in the launcher.

    page.py, templates/, static/   the page: it draws, and decides nothing
    instance.py                    what each instance serves: the shop, with the page
    control/                       what the page's buttons ask of ``lockshop up`` (HTTP),
                                   one blueprint per concern
    runner.py                      runs one at a time in the background, numbered and kept:
    lab_runs.py, live_sales.py       a lab, or a Locust sale
    snapshot.py, recent_holds.py   one look for every browser polling: the state, the holds
    handbook.py                    the handbook, built on first use and served
    launch.py                      how ``lockshop up`` starts it all, in order

The room (``lockshop.room``: students' names, sources, the grading queue and the board)
is served by the control too, at ``/room/``; a result a student's own machine graded
(``--report``) is the room's to check. The control and the room stand on one front
door (``lockshop.front_door``): the one way either says no (``Refused(status, why)``),
the admin token, the capped JSON reader.

The page is served by the shop's instances, so that it reads their API from its
own origin; the shop does not import it (``instance.py`` mounts it). Only the
launcher owns the processes, the servers and the labs, so only its control can
pause an instance, stop Redis, stage a lab or run a sale. The control answers
on a port of its own, with the same admin token as the shop: reading is open to
students, acting needs the token.
"""

#: The control's port unless ``--control-port`` says another: fixed, so that the room's
#: address stays the same across restarts of ``up`` (the shop's instances take 8000
#: and up, the handbook's server 8100).
CONTROL_PORT = 8090

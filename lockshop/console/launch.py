"""How ``lockshop up`` starts the console, in the order it must.

1. The control's port is taken first, so that every instance can be told where
   the control answers: at an address a student's laptop reaches (the machine's
   LAN address when ``up`` listens on every interface, never 0.0.0.0). Unless told
   another, it is ``CONTROL_PORT``, the same at every start, so the room's address
   is too; only if that one is taken (a second ``up`` on the machine) a free one.
2. The instances serve the shop with the console's page on it (``instance.py``).
3. Once they run, the control answers, from a thread of the launcher: it owns
   the processes, the servers and the labs.
"""

from __future__ import annotations

import errno
import socket
import threading
from pathlib import Path

from flask import Flask
from werkzeug.serving import WSGIRequestHandler, make_server, select_address_family

from lockshop.cluster.addresses import reachable_host
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.processes import ServerProcess, StartError
from lockshop.console import CONTROL_PORT
from lockshop.console.control import Control, control_app
from lockshop.console.page import CONTROL_URL_VARIABLE

#: What each instance serves: the shop, with the console's page.
INSTANCE_APP = "lockshop.console.instance:app"


class QuietRequests(WSGIRequestHandler):
    """No line per request: thirty browsers polling five looks a second would fill the
    instructor's terminal, and a terminal (or a pipe) that stops reading would stop the
    control at its next line. Errors are still said."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if isinstance(code, int) and code >= 500:
            super().log_request(code, size)


class Console:
    """The console of one ``lockshop up``: its control's port now, the control later."""

    def __init__(self, host: str, port: int | None = None) -> None:
        """Bind the control's socket on ``host``: ``port``, or by default ``CONTROL_PORT``
        (a free port if that one is taken: ``moved`` then says so)."""
        self._app = Flask(__name__)  # until start(); the socket is bound now
        self.moved = False
        try:
            self._server = self._bind(host, CONTROL_PORT if port is None else port)
        except OSError as error:
            if port is not None or error.errno != errno.EADDRINUSE:
                raise StartError(f"the control's port {CONTROL_PORT if port is None else port} "
                                 f"on {host}: {error.strerror}") from None
            self._server, self.moved = self._bind(host, 0), True
        self.control_url = f"http://{reachable_host(host)}:{self._server.port}"
        self.control: Control | None = None

    def _bind(self, host: str, port: int):
        # Bound here, not by make_server: on a port in use it prints and exits the process.
        with socket.socket(select_address_family(host, port), socket.SOCK_STREAM) as bound:
            bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            bound.bind((host, port))
            bound.listen(128)
            return make_server(host, bound.getsockname()[1], self._dispatch, threaded=True,
                               request_handler=QuietRequests, fd=bound.fileno())

    def served(self) -> dict:
        """What the instances serve, as ``Cluster``'s keywords."""
        return {"app": INSTANCE_APP, "env": {CONTROL_URL_VARIABLE: self.control_url}}

    @property
    def room_url(self) -> str:
        """Where the students open the room."""
        return f"{self.control_url}/room/"

    def start(self, cluster: Cluster, servers: dict[str, ServerProcess], runtime: Path,
              room_code: str | None = None, gradings: int | None = None,
              room_limits=None) -> Control:
        """Answer for ``cluster`` and ``servers``, keeping the console's files and the room
        in ``runtime`` (its code: ``room_code`` if given, else the one kept there; it
        runs ``gradings`` at once, by default the cores plus one; ``room_limits``: what its
        sandbox can enforce, ``lockshop.room.cgroups.Support``)."""
        control = Control(cluster, servers, cluster.config, runtime, room_code, gradings,
                          room_limits)
        self._app = control_app(control)
        threading.Thread(target=self._server.serve_forever, name="control", daemon=True).start()
        self.control = control
        return control

    def __enter__(self) -> Console:
        return self

    def __exit__(self, *exc_info) -> None:
        if self.control is not None:
            self._server.shutdown()  # only once serving: it waits for the loop to stop
            self.control.close()
        self._server.server_close()

    def _dispatch(self, environ, start_response):
        return self._app(environ, start_response)

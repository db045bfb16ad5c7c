"""The control's HTTP face: what the console's instructor buttons call.

GET is open (a student's console reads the same state); everything that acts
needs the admin token, as the shop's admin API does. Every answer carries
CORS headers: the console's page comes from a shop instance, on another port.

    GET  /control/state                       instances, servers, running lab and sale
    POST /control/instances/<name>/<action>   pause, resume, kill, restart, expire-session
    POST /control/servers/<name>/<action>     stop, start
    GET  /control/labs                        every lab, by article
    POST /control/labs/<id>/run               start one; 409 while another runs
    GET  /control/labs/runs/<n>               its record so far
    POST /control/sales                       start a sale; 409 while another runs
    GET  /control/sales, /control/sales/<n>   the sales, sampled once a second
    GET  /control/holds?since=<epoch s>       every instance's holds, and the overlaps
    POST /control/network/partition           {"from": [hosts], "to": [hosts], "one_way": false}
    POST /control/network/slow                {"host": h, "delay_ms": 900, "jitter_ms": 0,
                                               "loss_percent": 0, "to": [hosts] or absent}
    POST /control/network/heal                every link works again, at full speed
                                              (all three only with ``lockshop up --hosts``)
    GET  /control/exercises                   every exercise and what it asks
    POST /control/room/results                a student's result (X-Room-Code, not the token)
    GET  /control/room                        the room board: each student's latest results
    GET  /handbook/...                        the handbook (built on first use if need be)
"""

from __future__ import annotations

import hmac
import threading
from pathlib import Path

from flask import Flask, Response, jsonify, request, send_from_directory
from werkzeug.exceptions import HTTPException

from lockshop.cluster.client import ShopClient, ShopClientError
from lockshop.cluster.hold_logs import collect_holds
from lockshop.cluster.launcher import Cluster
from lockshop.cluster.network import Link, NetworkError
from lockshop.cluster.processes import ServerProcess, process_state
from lockshop.cluster.zookeeper_sessions import end_session
from lockshop.console import Busy
from lockshop.console.handbook import Handbook
from lockshop.console.lab_runs import LabRunner, catalogue
from lockshop.console.live_sales import BadSale, SaleRequest, SaleRunner
from lockshop.console.room import MAX_BYTES, Room, RoomRefused
from lockshop.exercises import catalogue as catalogue_of_exercises
from shop.config import Config
from shop.i18n import ENGLISH, N_, language, lazy_gettext
from shop.i18n.web import init_app as init_languages

ROOM_RESULTS = "/control/room/results"
INSTANCE_ACTIONS = ("pause", "resume", "kill", "restart", "expire-session")
SERVER_ACTIONS = ("stop", "start")


def json_object(fields: str) -> dict:
    """The request's JSON body, which must be an object (400 naming ``fields`` if not)."""
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ControlError(400, lazy_gettext("send a JSON object: %(fields)s", fields=fields))
    return body


class ControlError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(str(message))
        #: Lazy (lazy_gettext) where it can be: said in English as the stable ``error``,
        #: and in the request's language as ``message``.
        self.status, self.message = status, message


class Control:
    """The launcher's parts, and what may be done to them."""

    def __init__(self, cluster: Cluster, servers: dict[str, ServerProcess], config: Config,
                 runtime: Path) -> None:
        self.cluster, self.servers, self.config = cluster, servers, config
        self.network = cluster.network
        self.labs = LabRunner(runtime / "labs")
        self.sales = SaleRunner(cluster, config.admin_token, runtime / "sales")
        self.handbook = Handbook(runtime)
        self.room = Room([exercise["id"] for exercise in catalogue_of_exercises()])
        #: One fault at a time: a restart takes seconds, and a second click must wait.
        self._acting = threading.Lock()

    def state(self) -> dict:
        lab, sales = self.labs.current(), self.sales.sales()
        return {
            "instances": [{"name": i.name, "url": i.url, "pid": i.process.pid,
                           "state": process_state(i.process.pid, i.process.poll())}
                          for i in self.cluster.instances],
            "servers": [{"name": name, "state": server_state(server)}
                        for name, server in self.servers.items()],
            "token_required": bool(self.config.admin_token),
            "lab": lab.as_dict() if lab else None,
            "sale": sales[-1].number if sales else None,
            "network": self.network.as_dict() if self.network else None,
            # The instructor's page shows it to the room; anyone who can read the
            # console is in the room.
            "room_code": self.room.code,
        }

    def partition(self, side_a: object, side_b: object, one_way: object = False) -> None:
        """Cut the links from the hosts of ``side_a`` to those of ``side_b`` (and back)."""
        if self.network is None:
            raise ControlError(409, lazy_gettext("this cluster runs on one loopback: start it with "
                                                 "'lockshop up --hosts' to cut links"))
        for side in (side_a, side_b):
            if (not isinstance(side, list) or not side
                    or not all(isinstance(h, str) for h in side)):
                raise ControlError(400, lazy_gettext(
                        "'from' and 'to' must be non-empty lists of host names"))
            self._refuse_unknown(set(side) - {"machine"})
        if set(side_a) & set(side_b):
            raise ControlError(422, lazy_gettext("a host cannot be cut off from itself"))
        if not isinstance(one_way, bool):
            raise ControlError(400, lazy_gettext("'one_way' must be true or false"))
        if "machine" in side_b or ("machine" in side_a and not one_way):
            raise ControlError(422, lazy_gettext(
                    "the machine's side can only be cut one way, from it: "
                    "'from': ['machine'], 'one_way': true"))
        with self._acting:
            self.network.partition(side_a, side_b, one_way=one_way)

    def slow(self, body: dict) -> None:
        """Slow what one host sends (to ``to`` only, if given): delay, jitter, loss."""
        if self.network is None:
            raise ControlError(409, lazy_gettext("this cluster runs on one loopback: start it with "
                                                 "'lockshop up --hosts' to slow links"))
        host, receivers = body.get("host"), body.get("to")
        if not isinstance(host, str):
            raise ControlError(400, lazy_gettext("'host' must be the name of a host"))
        if receivers is not None and (not isinstance(receivers, list) or not receivers or
                                      not all(isinstance(r, str) for r in receivers)):
            raise ControlError(400, lazy_gettext(
                    "'to' must be a non-empty list of host names, or absent"))
        if host == "machine":
            raise ControlError(422, lazy_gettext(
                    "only a host's link can be slowed, not the machine's"))
        self._refuse_unknown({host, *(receivers or ())} - {"machine"})
        figures = {}
        for name in ("delay_ms", "jitter_ms", "loss_percent"):
            value = body.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ControlError(400, lazy_gettext("'%(name)s' must be a number", name=name))
            figures[name] = value
        try:
            link = Link(**figures)
            with self._acting:
                self.network.slow(host, link, receivers)
        except NetworkError as error:
            raise ControlError(422, str(error)) from None

    def _refuse_unknown(self, names: set[str]) -> None:
        unknown = sorted(names - set(self.network.hosts))
        if unknown:
            raise ControlError(422, lazy_gettext(
                    "no host named %(unknown)s; the hosts are %(hosts)s and "
                    "machine", unknown=", ".join(unknown),
                    hosts=", ".join(sorted(self.network.hosts))))

    def heal(self) -> None:
        if self.network is None:
            raise ControlError(409, lazy_gettext(
                    "this cluster runs on one loopback: nothing to heal"))
        with self._acting:
            self.network.heal()

    def act_on_instance(self, name: str, action: str) -> None:
        try:
            self.cluster.instance(name)
        except KeyError:
            raise ControlError(404, lazy_gettext("no instance named %(name)r", name=name)) from None
        if action not in INSTANCE_ACTIONS:
            raise ControlError(404, lazy_gettext("no action %(action)r; choose from %(actions)s",
                                                 action=action,
                                                 actions=", ".join(INSTANCE_ACTIONS)))
        with self._acting:
            if action == "expire-session":
                self._expire_sessions(name)
            else:
                getattr(self.cluster, action)(name)

    def act_on_server(self, name: str, action: str) -> None:
        server = self.servers.get(name)
        if server is None:
            raise ControlError(404, lazy_gettext("no server named %(name)r; this launcher started "
                                                 "%(servers)s", name=name,
                                                 servers=", ".join(self.servers) or "none"))
        if action not in SERVER_ACTIONS:
            raise ControlError(404, lazy_gettext("no action %(action)r; choose from %(actions)s",
                                                 action=action, actions=", ".join(SERVER_ACTIONS)))
        with self._acting:
            if action == "stop":
                server.stop()
            elif server.process is None:
                server.start()

    def check_strategy(self, name: str) -> None:
        """Refuse a strategy the shop does not know, or cannot use now, with a 422."""
        try:
            listed = ShopClient(self.cluster.urls[0], timeout=5).get("/api/strategies")
        except ShopClientError as error:
            raise ControlError(503, lazy_gettext(
                    "the shop does not answer: %(error)s", error=error)) from None
        strategy = next((s for s in listed["strategies"] if s["name"] == name), None)
        if strategy is None:
            raise ControlError(422, lazy_gettext("no strategy named %(name)r", name=name))
        if not strategy["available"]:
            raise ControlError(422, lazy_gettext("strategy %(name)r cannot run here now (it needs "
                                                 "%(needs)s)", name=name,
                                      needs=", ".join(strategy["requires"])))

    def holds(self, since: float) -> dict:
        return collect_holds({i.name: i.url for i in self.cluster.instances}, since)

    def _expire_sessions(self, name: str) -> None:
        if not self.config.zk_hosts:
            raise ControlError(409, lazy_gettext("this cluster has no ZooKeeper"))
        client = ShopClient(self.cluster.instance(name).url, self.config.admin_token, timeout=5)
        try:
            sessions = client.get("/api/admin/zookeeper-sessions")["sessions"]
        except ShopClientError as error:
            raise ControlError(503, lazy_gettext(
                    "%(name)s did not say its sessions: %(error)s", name=name,
                    error=error)) from None
        if not sessions:
            raise ControlError(409, lazy_gettext("%(name)s has no ZooKeeper session open yet (no "
                                                 "ZooKeeper strategy or leader election used)",
                                                 name=name))
        for session in sessions:
            end_session(int(session["session_id"], 16), bytes.fromhex(session["password"]),
                        self.config.zk_hosts)

    def close(self) -> None:
        self.labs.close()


def server_state(server: ServerProcess) -> str:
    if server.process is None:
        return "down"
    return process_state(server.process.pid, server.process.poll())


def control_app(control: Control) -> Flask:
    app = Flask(__name__, static_folder=None)
    # The console's lab list and texts in the language of the page that asks.
    init_languages(app)
    app.json.sort_keys = False
    token = control.config.admin_token

    @app.before_request
    def require_token_to_act():
        if request.method == "OPTIONS":
            return Response(status=204)  # a CORS preflight: the headers below say it all
        if request.method == "GET" or not token or request.path == ROOM_RESULTS:
            return None  # a student's result needs the room code, not the admin token
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                                 token.encode()):
            raise ControlError(401, lazy_gettext(
                    "this needs the admin token (Authorization: Bearer "
                    "<token>)"))
        return None

    @app.after_request
    def allow_the_console(response: Response) -> Response:
        response.headers["Access-Control-Allow-Origin"] = "*"
        response.headers["Access-Control-Allow-Headers"] = ("Authorization, Content-Type, "
                                                            "Accept-Language, X-Room-Code")
        response.headers["Access-Control-Allow-Methods"] = "GET, POST"
        return response

    @app.errorhandler(ControlError)
    def refuse(error: ControlError):
        with language(ENGLISH):
            english = str(error.message)
        return jsonify({"error": english, "message": str(error.message)}), error.status

    @app.errorhandler(Busy)
    def busy(error: Busy):
        return refuse(ControlError(409, error.args[0]))  # one lab, or one sale, at a time

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        return jsonify({"error": error.description}), error.code

    @app.get("/control/state")
    def state():
        return jsonify(control.state())

    @app.post("/control/instances/<name>/<action>")
    def instance_action(name: str, action: str):
        control.act_on_instance(name, action)
        return jsonify(control.state())

    @app.post("/control/servers/<name>/<action>")
    def server_action(name: str, action: str):
        control.act_on_server(name, action)
        return jsonify(control.state())

    @app.get("/control/labs")
    def lab_list():
        return jsonify({"articles": catalogue()})

    @app.post("/control/labs/<name>/run")
    def run_lab(name: str):
        try:
            run = control.labs.start(name)
        except KeyError:
            raise ControlError(404, lazy_gettext("no lab named %(name)r", name=name)) from None
        return jsonify(run.as_dict()), 202

    @app.get("/control/labs/runs/<int:number>")
    def lab_run(number: int):
        return jsonify(found(control.labs.run, number, N_("lab run")).as_dict())

    @app.post("/control/sales")
    def start_sale():
        body = json_object("strategy, buyers, seconds, business_delay_ms, product")
        try:
            sale_request = SaleRequest(**body)
        except TypeError as error:
            raise ControlError(400, lazy_gettext("not a sale: %(error)s", error=error)) from None
        except BadSale as bad:
            raise ControlError(422, bad.args[0]) from None
        control.check_strategy(sale_request.strategy)
        return jsonify(control.sales.start(sale_request).as_dict()), 202

    @app.get("/control/sales")
    def sales():
        return jsonify({"sales": [s.as_dict() for s in control.sales.sales()]})

    @app.get("/control/sales/<int:number>")
    def sale(number: int):
        return jsonify(found(control.sales.sale, number, N_("sale")).as_dict())

    @app.post("/control/network/partition")
    def partition():
        body = json_object("from, to, one_way")
        control.partition(body.get("from"), body.get("to"), body.get("one_way", False))
        return jsonify(control.state())

    @app.post("/control/network/slow")
    def slow():
        control.slow(json_object("host, delay_ms, jitter_ms, loss_percent, to"))
        return jsonify(control.state())

    @app.post("/control/network/heal")
    def heal():
        control.heal()
        return jsonify(control.state())

    @app.get("/handbook/")
    @app.get("/handbook/<path:page>")
    def handbook(page: str = "index.html"):
        folder = control.handbook.folder()
        if folder is None:
            raise ControlError(404, lazy_gettext(
                    "the handbook is not built here: ./run docs build"))
        if page.endswith("/"):
            page += "index.html"
        return send_from_directory(folder, page)

    @app.get("/control/exercises")
    def exercises():
        return jsonify({"exercises": catalogue_of_exercises()})

    @app.post(ROOM_RESULTS)
    def room_result():
        if (request.content_length or 0) > MAX_BYTES:
            raise ControlError(400, lazy_gettext(
                    "a result is at most %(bytes)s bytes", bytes=MAX_BYTES))
        try:
            kept = control.room.post(request.headers.get("X-Room-Code"),
                                     request.get_data(cache=False))
        except RoomRefused as refused:
            raise ControlError(refused.status, refused.message) from None
        return jsonify(kept), 201

    @app.get("/control/room")
    def room():
        return jsonify(control.room.board())

    @app.get("/control/holds")
    def holds():
        try:
            since = float(request.args.get("since", "0"))
        except ValueError:
            raise ControlError(400, lazy_gettext(
                    "since must be a number of seconds (time.time())")) from None
        return jsonify(control.holds(since))

    return app


def found(lookup, number: int, what: str):
    """``lookup(number)``, or a 404 that says what was not found."""
    try:
        return lookup(number)
    except KeyError:
        raise ControlError(404, lazy_gettext(
                "no %(what)s %(number)s", what=lazy_gettext(what), number=number)) from None

"""The cluster and its faults: what runs, and what the instructor does to it.

    GET  /control/state                       instances, servers, running lab and sale
    POST /control/instances/<name>/<action>   pause, resume, kill, restart, expire-session
    POST /control/servers/<name>/<action>     stop, start
    POST /control/network/partition           {"from": [hosts], "to": [hosts], "one_way": false}
    POST /control/network/slow                {"host": h, "delay_ms": 900, "jitter_ms": 0,
                                               "loss_percent": 0, "to": [hosts] or absent}
    POST /control/network/heal                every link works again, at full speed
                                              (all three only with ``lockshop up --hosts``)

Each action answers with the state it left; a look may be half a second old (one
look serves every browser polling it).
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from lockshop.console.control.web import acting_needs_the_token, json_object, the_control

cluster = acting_needs_the_token(Blueprint("cluster", __name__, url_prefix="/control"))


@cluster.get("/state")
def state():
    return jsonify(the_control().state())


@cluster.post("/instances/<name>/<action>")
def instance_action(name: str, action: str):
    the_control().faults.act_on_instance(name, action)
    return jsonify(the_control().changed())


@cluster.post("/servers/<name>/<action>")
def server_action(name: str, action: str):
    the_control().faults.act_on_server(name, action)
    return jsonify(the_control().changed())


@cluster.post("/network/partition")
def partition():
    body = json_object("from, to, one_way")
    the_control().faults.partition(body.get("from"), body.get("to"), body.get("one_way", False))
    return jsonify(the_control().changed())


@cluster.post("/network/slow")
def slow():
    the_control().faults.slow(json_object("host, delay_ms, jitter_ms, loss_percent, to"))
    return jsonify(the_control().changed())


@cluster.post("/network/heal")
def heal():
    the_control().faults.heal()
    return jsonify(the_control().changed())

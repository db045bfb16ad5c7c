"""Labs, staged by the launcher one at a time, read step by step while they run.

    GET  /control/labs                  every lab, by article
    POST /control/labs/<id>/run         start one; 409 while another runs
    GET  /control/labs/runs/<n>         its record so far
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from lockshop.console.control.web import acting_needs_the_token, the_control
from lockshop.console.lab_runs import listing

labs = acting_needs_the_token(Blueprint("labs", __name__, url_prefix="/control/labs"))


@labs.get("")
def lab_list():
    return jsonify({"articles": listing()})


@labs.post("/<name>/run")
def run_lab(name: str):
    control = the_control()
    run = control.labs.start(name)
    control.changed()  # the state names the running lab from now on
    return jsonify(run.as_dict()), 202


@labs.get("/runs/<int:number>")
def lab_run(number: int):
    return jsonify(the_control().labs.run(number).as_dict())

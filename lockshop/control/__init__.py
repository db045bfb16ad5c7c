"""The launcher's control: what the workshop console asks of ``lockshop up``.

The shop's instances serve the console's page (``shop.web``), but only the
launcher owns the processes, the servers and the labs, so only it can pause
an instance, stop Redis, stage a lab or run a sale. It answers on a port of
its own, with the same admin token as the shop; reading is open to students,
acting needs the token.
"""


class Busy(Exception):
    """Something of the same kind is already running: one lab (or sale) at a time."""

"""What each instance of ``lockshop up`` serves: the shop, with the console's page.

gunicorn runs it (``lockshop.console.instance:app``) as it would run the shop
alone (``shop.wsgi:app``). The page is mounted here rather than in the shop so
that the served app never imports its tooling; it is served by the instances
rather than by the control so that it reads the shop's API from its own origin.
"""

import os

from lockshop.console.page import CONTROL_URL_VARIABLE, mount
from shop.wsgi import app

mount(app, control_url=os.environ.get(CONTROL_URL_VARIABLE))

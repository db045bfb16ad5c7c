"""``python -m lockshop.cli``: the same as the ``lockshop`` command."""

import sys

from lockshop.cli import main

sys.exit(main())

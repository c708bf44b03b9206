"""``python -m runner.cli``: the ``perfgate`` command."""

import sys

from .main import main

sys.exit(main())

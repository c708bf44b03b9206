"""``python -m runner.worker``: one revision's fork server (:func:`runner.worker.serve.main`)."""

import sys

from .serve import main

sys.exit(main())

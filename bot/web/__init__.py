"""The App's web pages and endpoints (Flask blueprints): the webhook ``intake``, the ``runs``
pages, the history ``dashboard``, and ``signin`` (signing in with GitHub, the read check of
every view)."""

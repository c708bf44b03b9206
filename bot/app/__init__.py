"""The App's event logic and its shell, one folder per rule.

``core/`` decides (pure), ``job/`` carries out (the shell of a job), ``github/`` talks to GitHub
and the regression webhook, ``store/`` holds the App's own tables; ``runtime`` and ``queue``
compose them. A delivery's path: ``bot.web.intake`` verifies and records it (``core.events``),
``queue`` hands it to the worker, ``job.executor`` fetches the ``facts`` its handler module
declares and asks that module (``core.handlers``) for ``actions``, which it carries out through
``github.gateway`` and ``store.store``. ``core.ingest``, ``core.conclude`` and ``core.messages``
turn a run's results and outcomes into check runs and comments.
"""

"""The App's event logic and its shell.

A delivery's path: ``bot.web.intake`` verifies and records it (``events``), ``queue`` hands it to
the worker, ``executor`` fetches the ``facts`` its handler module declares and asks that module
(``handlers``, pure) for ``actions``, which it carries out through ``gateway`` (GitHub) and
``store`` (the App's ``tables``). ``ingest``, ``conclude`` and ``messages`` turn a run's results
and outcomes into check runs and comments (pure). ``runtime`` composes it all.
"""

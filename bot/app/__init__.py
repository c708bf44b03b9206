"""The App's event logic and its shell.

A delivery's path: ``bot.web.intake`` verifies and records it (``events``), ``queue`` hands it to
the worker, ``executor`` gathers its ``facts`` and asks ``decide`` (pure) for ``actions``, which it
carries out through ``gateway`` (GitHub) and ``store`` (the App's ``tables``). ``ingest`` and
``messages`` turn a run's results and outcomes into check runs and comments (pure).
"""

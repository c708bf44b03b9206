"""The ``perfgate`` command line: :mod:`.main` (the parser, exit statuses, the plug-in group),
:mod:`.compare` (``compare``, ``run``, ``report``), :mod:`.demo`, :mod:`.doctor`, :mod:`.init`. The trace and
intent commands live with their analyses (:mod:`runner.cli.trace`, :mod:`runner.intent.cli`)."""

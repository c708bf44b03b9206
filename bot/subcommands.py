"""The App's sub-commands of ``perfgate`` (``history``, ``serve``, ``worker``, ``sweep``,
``migrate``, ``app manifest``, ``queue-tls``),
plugged into the engine's command line through the ``perfgate.commands`` entry point group.

Imports nothing but argparse: ``perfgate --help`` stays light; each handler is a
``"module:function"`` string that ``runner.cli.main`` imports only when its sub-command runs
(Flask, SQLAlchemy, PyGithub), a missing package being a user error naming the extra.
"""

from __future__ import annotations

from runner import formats


def register(sub, parser_class) -> None:
    """Add the App's sub-commands to the ``perfgate`` sub-parsers ``sub``."""
    p = sub.add_parser("history", help="store results and show series with change points")
    hsub = p.add_subparsers(dest="history_command", metavar="ACTION", parser_class=parser_class)
    hsub.required = True
    h = hsub.add_parser("add", help="store a compare or run result, or import asv / pytest-benchmark / Google "
                                    "Benchmark / nvbench / github-action-benchmark results")
    h.add_argument("results", metavar="PATH",
                   help="a results.json, a pytest-benchmark, Google Benchmark, nvbench or github-action-benchmark "
                        "JSON file, an asv result file or results/ directory")
    h.add_argument("--repository", metavar="OWNER/NAME")
    h.add_argument("--format", default="auto", choices=formats.FORMATS,
                   help="for github-action-benchmark's custom JSON, which way is better: customSmallerIsBetter or "
                        "customBiggerIsBetter (default: auto, which tells the other formats apart)")
    h.set_defaults(handler="bot.history.cli:main_add")
    h = hsub.add_parser("show", help="series and change points")
    h.add_argument("bench", nargs="?", metavar="BENCH")
    h.add_argument("--repository", metavar="OWNER/NAME")
    h.add_argument("--json", action="store_true")
    h.add_argument("--measure", choices=("time", "memory", "compile"), default="time",
                   help="the series of time per call (default), of peak memory, or of the first call's compile time")
    h.set_defaults(handler="bot.history.cli:main_show")

    p = sub.add_parser("serve", help="the GitHub App (development server)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.set_defaults(handler="bot.cli:main_serve")

    p = sub.add_parser("worker", help="the App's background job consumer")
    p.set_defaults(handler="bot.cli:main_worker")

    p = sub.add_parser("sweep", help="enqueue lost deliveries again and time out silent runs, once, now")
    p.add_argument("--stale-after", type=float, default=900, metavar="SECONDS",
                   help="a delivery queued longer than this lost its job (default: 900)")
    p.add_argument("--reconcile-after", type=float, default=None, metavar="SECONDS",
                   help="set right the check runs and sticky comments of runs that ended at least this long "
                        "ago (default: 900, when a write GitHub carried out late has surely landed)")
    p.set_defaults(handler="bot.cli:main_sweep")

    p = sub.add_parser("app", help="register the GitHub App: its manifest")
    asub = p.add_subparsers(dest="app_command", metavar="ACTION", parser_class=parser_class)
    asub.required = True
    a = asub.add_parser("manifest", help="print the GitHub App manifest for a server at --url")
    a.add_argument("--url", required=True, metavar="PUBLIC_URL", help="the https:// address GitHub delivers to")
    a.add_argument("--name", default="perfgate", help="the App's name on GitHub (default: perfgate)")
    a.add_argument("--organization", metavar="ORG", help="register it for an organization")
    a.set_defaults(handler="bot.web.setup:main_app_manifest")

    p = sub.add_parser("migrate", help="upgrade the App's database to the newest schema, then exit")
    p.set_defaults(handler="bot.cli:main_migrate")

    p = sub.add_parser("queue-tls", help="write the job queue's Redis TLS files (a private CA, a server certificate)")
    p.add_argument("dir", metavar="DIR", help="where ca.crt, redis.crt and redis.key go (kept when they exist)")
    p.add_argument("--host", action="append", metavar="NAME",
                   help="a name clients reach Redis by (repeatable; default: redis)")
    p.add_argument("--owner", metavar="UID:GID", help="give redis.crt and redis.key to this account (Redis' own)")
    p.set_defaults(handler="bot.tls:main_queue_tls")

"""The ``perfgate`` command line (DESIGN.md, "Contracts / CLI").

The engine's sub-commands are defined here, each handler named as ``"module:function"`` of this
package and imported only when that sub-command runs, so ``perfgate --help`` and the light
commands never import torch or scipy. Other parts plug their sub-commands in through the entry
point group ``perfgate.commands`` (the App adds ``history``, ``serve``, ``worker``, ``migrate``):
each entry point is a ``register(subparsers, parser_class)`` function, and the engine never names
them. A handler — a ``"module:function"`` string or a callable — takes the parsed
``argparse.Namespace`` and returns the exit status.

Exit status: 0 done; 1 a regression tripped ``--fail-on-regression``; 2 bad input (one line
``perfgate: error: ...``, never a traceback); 3 an internal failure.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import traceback

from .. import __version__
from ..config import DEVICES
from ..config_values import is_fraction, read_fraction
from ..errors import EXIT_INTERNAL, EXIT_USAGE, UserError
from ..report.formats import names as report_formats


def _fraction(text: str) -> float:
    try:
        value = read_fraction(text, percent=False)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not is_fraction(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be a fraction in [0, 1), e.g. 0.02 for 2 %")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse that exits with status 2 and one line, as every other bad input does."""

    def error(self, message: str) -> None:  # pragma: no cover - exercised through main()
        # main() prints "perfgate: error: ..."; name the sub-command, not the program twice.
        command = self.prog.removeprefix("perfgate").strip()
        raise UserError(f"{command}: {message}" if command else message)


def _add_measure_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", default=".", help="the target git repository (default: .)")
    p.add_argument("--benchmarks", metavar="DIR", help="benchmark directory (default: from the config, else benchmarks/)")
    p.add_argument("--filter", metavar="PATTERN", help="glob or substring of benchmark names")
    p.add_argument("--device", choices=DEVICES,
                   help="where benchmarks run (default: config, else auto)")
    p.add_argument("--max-time", type=_positive_float, metavar="SECONDS", help="time budget of the timing pass")
    p.add_argument("--min-rounds", type=_positive_int, metavar="N", help="rounds before the first look")
    p.add_argument("--min-sample-time", type=_positive_float, metavar="SECONDS",
                   help="shortest duration of one sample; the inner loop count is calibrated to it")
    p.add_argument("--cold-cache", action="store_true", default=None,
                   help="flush the GPU L2 cache before every timed call (CUDA only)")
    p.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                   help="a set-up or sample that takes longer (or past its benchmark's share of "
                        "--max-time) is failed and its worker restarted")
    p.add_argument("--config", metavar="FILE",
                   help="a perfgate.toml to use instead of the revision's own (compare: the "
                        "base's, so a pull request cannot change how it is judged; run: the "
                        "measured revision's)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: .perfgate/<timestamp>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    """The full parser; each sub-parser carries ``handler="module:function"``."""
    parser = _Parser(prog="perfgate", description="Paired base-vs-head GPU/CPU benchmarks with root-cause hints.")
    parser.add_argument("--version", action="version", version=f"perfgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("compare", help="benchmark base against head, interleaved and paired")
    p.add_argument("--base", required=True, metavar="REF",
                   help="the revision compared against (its configuration is the one read)")
    p.add_argument("--head", required=True, metavar="REF", help="the revision under test")
    _add_measure_options(p)
    p.add_argument("--threshold", type=_fraction, metavar="FRACTION", help="practical significance (default 0.02)")
    p.add_argument("--alpha", type=_fraction, metavar="FRACTION", help="family-wise significance level (default 0.05)")
    p.add_argument("--no-reports", dest="reports", action="store_false", default=True,
                   help="write results.json only, no report.md/report.html (the caller renders them: the Action)")
    p.add_argument("--profile", dest="profile", action="store_true", default=None, help="profile both sides (default)")
    p.add_argument("--no-profile", dest="profile", action="store_false", help="skip the profiling pass")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when a regression beyond fail_threshold is found (or a memory regression, "
                        "with fail_on_memory_regression)")
    p.add_argument("--title", help="PR title, for the intent section and the claims")
    body = p.add_mutually_exclusive_group()
    body.add_argument("--body", help="PR body, for the intent section and the claims")
    body.add_argument("--body-file", metavar="FILE",
                      help="PR body read from FILE ('-' for standard input), instead of --body")
    p.add_argument("--labels", help="comma-separated PR labels, for the intent section")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--affected", dest="affected", action="store_true", default=None,
                       help="measure only the benchmarks the change can affect (the base's code map; "
                            "default: the config's [selection] enabled)")
    which.add_argument("--all", dest="affected", action="store_false",
                       help="measure every benchmark, even where the config enables selection")
    p.add_argument("--map", dest="map_file", metavar="RESULTS.json",
                   help="with --affected: the code map of this stored result (e.g. the base's `perfgate run`) "
                        "instead of mapping the base here; its values are carried forward")
    p.add_argument("--force-run", action="append", default=[], metavar="NAME",
                   help="with --affected: run this benchmark (a name or glob; repeatable) whatever the selection "
                        "says (the App passes its selection misses)")
    p.set_defaults(handler="runner.cli.compare:main_compare")

    p = sub.add_parser("run", help="benchmark one revision (history on the default branch)")
    p.add_argument("--rev", default="HEAD", metavar="REF",
                   help="the revision to measure (default: HEAD)")
    p.add_argument("--no-map", dest="code_map", action="store_false", default=True,
                   help="skip the code map's pass (which files each benchmark runs; PR selection reads it)")
    _add_measure_options(p)
    p.set_defaults(handler="runner.cli.compare:main_run")

    p = sub.add_parser("bisect", help="find the commit that brought a regression: paired compares against --good")
    p.add_argument("--good", required=True, metavar="SHA", help="a commit without the regression (the older one)")
    p.add_argument("--bad", required=True, metavar="SHA", help="a commit with it, on the first-parent line after --good")
    p.add_argument("--benchmark", metavar="PATTERN",
                   help="glob or substring of the benchmarks to look at (the clearest regression among them is followed)")
    p.add_argument("--repo", default=".", help="the target git repository (default: .)")
    p.add_argument("--benchmarks", metavar="DIR", help="benchmark directory (default: from the config, else benchmarks/)")
    p.add_argument("--device", choices=DEVICES,
                   help="where benchmarks run (default: config, else auto)")
    p.add_argument("--max-time", type=_positive_float, metavar="SECONDS", help="time budget of each compare")
    p.add_argument("--min-sample-time", type=_positive_float, metavar="SECONDS",
                   help="shortest duration of one sample; the inner loop count is calibrated to it")
    p.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                   help="a set-up or sample that takes longer (or past its benchmark's share of "
                        "--max-time) is failed and its worker restarted")
    p.add_argument("--config", metavar="FILE", help="a perfgate.toml to use instead of the one at --good")
    p.add_argument("--max-compares", type=_positive_int, metavar="N",
                   help="stop after N compares (default 40)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: .perfgate/bisect-<timestamp>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler="runner.cli.bisect:main_bisect")

    p = sub.add_parser("report", help="re-render a stored results.json")
    p.add_argument("results", metavar="RESULTS.json")
    p.add_argument("--format", choices=report_formats(), default="term")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of standard output")
    p.set_defaults(handler="runner.cli.compare:main_report")

    p = sub.add_parser("demo", help="the real compare, end to end, on the bundled example")
    p.add_argument("--out", metavar="DIR", help="output folder (default: .perfgate/demo-<timestamp>)")
    p.add_argument("--max-time", type=_positive_float, default=None, metavar="SECONDS")
    p.add_argument("--no-profile", dest="profile", action="store_false", default=True)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(handler="runner.cli.demo:main_demo")

    p = sub.add_parser("kernels", help="registers, spills, shared memory and occupancy of the Triton "
                                       "kernels a change touches, base vs head, compiled without a GPU")
    p.add_argument("--repo", default=".", help="the target git repository (default: .)")
    p.add_argument("--base", required=True, metavar="REF", help="the revision compared against")
    p.add_argument("--head", required=True, metavar="REF", help="the revision under test")
    p.add_argument("--arch", action="append", metavar="SM",
                   help="target architecture, repeatable (sm_80, sm_86, sm_89, sm_90; default: "
                        "the base's gpu_arch, else sm_80 and sm_90)")
    p.add_argument("--capture", metavar="CMD",
                   help="a command run in each side's worktree whose Triton launches give the "
                        "specialisations (without a GPU: launches with CPU tensors, nothing run)")
    p.add_argument("--json", metavar="FILE", help="also write the section as JSON")
    p.set_defaults(handler="runner.cli.kernels:main_kernels")

    p = sub.add_parser("trace-summary", help="summarise a Kineto trace (.json/.json.gz)")
    p.add_argument("trace", metavar="TRACE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler="runner.cli.trace:main_trace_summary")

    p = sub.add_parser("trace-diff", help="profile diff + root-cause hints of two traces")
    p.add_argument("base_trace", metavar="BASE_TRACE")
    p.add_argument("head_trace", metavar="HEAD_TRACE")
    p.add_argument("--json", action="store_true", help="print JSON {base, head, hints}")
    p.set_defaults(handler="runner.cli.trace:main_trace_diff")

    p = sub.add_parser("intent", help="classify the optimisation strategy of a change")
    p.add_argument("--title", default="")
    p.add_argument("--body", default="")
    p.add_argument("--labels", default="", help="comma-separated labels")
    p.add_argument("--diff", metavar="FILE", help="a unified diff ('-' for standard input)")
    p.add_argument("--repo", metavar="PATH")
    p.add_argument("--base", metavar="REF")
    p.add_argument("--head", metavar="REF")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler="runner.intent.cli:main_intent")

    p = sub.add_parser("claims", help="the quantitative performance claims of a PR's text")
    p.add_argument("--title", default="", help="the PR's title")
    body = p.add_mutually_exclusive_group()
    body.add_argument("--body", default="", help="the PR's description")
    body.add_argument("--body-file", metavar="FILE",
                      help="the PR's description read from FILE ('-' for standard input)")
    p.add_argument("--json", metavar="FILE",
                   help="also write the claims to FILE (a JSON list; - prints it alone)")
    p.set_defaults(handler="runner.intent.claims_cli:main_claims")

    p = sub.add_parser("doctor", help="is this runner fit to measure? GPU and CPU checks, each with a fix")
    p.add_argument("--json", action="store_true", help="print JSON {checks, failed, warned}")
    p.add_argument("--path", default=".", metavar="DIR",
                   help="where results and worktrees go, for the free-space check (default: .)")
    p.set_defaults(handler="runner.cli.doctor:main_doctor")

    p = sub.add_parser("init", help="make a repository ready for perfgate: workflow, perfgate.toml, an example benchmark")
    p.add_argument("path", nargs="?", default=".", metavar="PATH", help="the target repository (default: .)")
    p.add_argument("--mode", choices=["app", "standalone"], default="app",
                   help="app: dispatched by the perfgate App (default); standalone: started by hand, comments itself")
    p.add_argument("--runs-on", metavar="LABELS", help="comma-separated runner labels (default: self-hosted,gpu)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.set_defaults(handler="runner.cli.init:main_init")

    for plugin in _plugins():
        plugin(sub, _Parser)
    return parser


#: The entry point group through which other parts add sub-commands.
PLUGIN_GROUP = "perfgate.commands"


def _plugins() -> list:
    """The ``register`` functions of the installed ``perfgate.commands`` entry points, by name."""
    from importlib.metadata import entry_points

    return [ep.load() for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name)]


def _resolve(handler):
    if callable(handler):
        return handler
    module_name, func_name = handler.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        if missing.split(".")[0] in ("runner", "bot", "action"):
            raise
        extra = "bot" if module_name.split(".")[0] == "bot" else "runner"  # the extra of the plugged-in App's commands
        raise UserError(f"this command needs the Python package {missing!r}: pip install 'perfgate[{extra}]'") from None
    return getattr(module, func_name)


#: The commands that hold what must be undone on the way out (locked GPU clocks, worker processes,
#: checkouts): a SIGTERM (a CI job cancelled, a timeout) ends them as Ctrl-C does, through their
#: ``finally`` blocks, instead of killing them where they stand (GPU review 2026-12-06, #9).
MEASURING = ("compare", "run", "bisect", "demo")


def _terminate_as_interrupt():
    """Make SIGTERM raise KeyboardInterrupt in this (main) thread; returns the handler it
    replaced (None off the main thread: nothing changed)."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, interrupt)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``perfgate`` console script; returns the exit status."""
    previous = None
    try:
        args = build_parser().parse_args(argv)
        if args.command in MEASURING:
            previous = _terminate_as_interrupt()
        return int(_resolve(args.handler)(args) or 0)
    except UserError as exc:
        print(f"perfgate: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("perfgate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `perfgate ... | head`: the reader left; nothing to report
        # Python's documented recipe (library/signal, "Note on SIGPIPE"): no second error at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0) if isinstance(exc.code, int) else 0
    except Exception:  # noqa: BLE001 - the last line of defence: report, exit 3
        traceback.print_exc()
        print("perfgate: internal error (a bug in perfgate; please report it with the lines above)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if previous is not None:  # a caller's own handler back (main() called in-process: tests)
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

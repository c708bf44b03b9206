"""``perfgate demo``: the real compare, end to end, on the bundled example.

Builds a throw-away git repository from ``examples/target`` (the base commit) and
``examples/demo/head`` laid over it (the head commit: ``rms_norm`` made slower by two
needless full-size copies, ``pairwise_distance`` made faster by a matrix-multiply formulation, ``softmax`` left
alone), then runs ``perfgate compare --base main --head pairwise-matmul`` on it, profiling included.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import UserError
from ..git import git

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: The demo's branches, named as a repository's and a pull request's ("base base → head head"
#: read as a stutter in the demo's first lines).
BASE_BRANCH, HEAD_BRANCH = "main", "pairwise-matmul"

DEMO_TITLE = "Faster pairwise_distance: a matmul-based algorithm instead of broadcasting"
DEMO_BODY = ("Replace the (n, m, d) broadcast temporary in pairwise_distance with |a|^2 + |b|^2 - 2ab^T "
             "computed through one matrix multiply: a cheaper algorithm for the same result.\n\n"
             "pairwise_distance is about 3x faster on CPU. While here, make rms_norm's input "
             "explicitly float32 before the reduction.")


def _git(repo: Path, *args: str) -> None:
    git(repo, "-c", "user.name=perfgate demo", "-c", "user.email=demo@perfgate.invalid", "-c", "commit.gpgsign=false",
        *args)


def build_demo_repo(dest: Path, examples: Path = EXAMPLES) -> Path:
    """Create the demo repository in ``dest`` with branches :data:`BASE_BRANCH` and
    :data:`HEAD_BRANCH`; returns ``dest``.

    Raises:
        UserError: the bundled examples are not there (perfgate was installed without them).
    """
    target, head = examples / "target", examples / "demo" / "head"
    if not target.is_dir() or not head.is_dir():
        raise UserError(f"the bundled example is missing ({target}); install perfgate from a clone: pip install -e .")
    shutil.copytree(target, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", ".perfgate"))
    _git(dest, "init", "-q", "-b", BASE_BRANCH)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "tinyops: base")
    _git(dest, "checkout", "-q", "-b", HEAD_BRANCH)
    shutil.copytree(head, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", DEMO_TITLE, "-m", DEMO_BODY)
    return dest


def main_demo(args) -> int:
    from ..pipeline.compare import CompareRequest, PullRequestText
    from .compare import compare_and_show, default_out

    out = Path(args.out) if args.out else default_out("demo")
    tmp = Path(tempfile.mkdtemp(prefix="perfgate-demo-"))
    try:
        repo = build_demo_repo(tmp / "tinyops")
        req = CompareRequest(repo=str(repo), base=BASE_BRANCH, head=HEAD_BRANCH, config=None,
                             out=out,
                             pr=PullRequestText(DEMO_TITLE, DEMO_BODY, ["performance"]),
                             config_overrides={"max_time": args.max_time, "profile": args.profile})
        compare_and_show(req, quiet=args.quiet)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

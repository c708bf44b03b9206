"""Handler of ``perfgate kernels``: the static pass (:mod:`runner.kernels.analysis`) over two
revisions checked out as the compare checks them out (:class:`runner.pipeline.revisions.Checkouts`),
for ``--arch``, else the base's ``gpu_arch``, else sm_80 and sm_90, specialised from the launches
``--capture CMD`` makes in each side's worktree (:func:`runner.kernels.capture.run`) where it
makes some, else from the source; printed
(:func:`runner.kernels.words.lines`) and, with ``--json FILE``, written as results.json's
``kernels`` section."""

from __future__ import annotations

import json
from pathlib import Path

from ..config import load
from ..errors import UserError
from ..git import repo_root, resolve
from ..kernels.analysis import analyse, archs_for, triton_version
from ..kernels.occupancy import ARCHS
from ..kernels.words import lines
from ..kernels.capture import run
from ..pipeline.revisions import Checkouts, source_paths


def main_kernels(args) -> int:
    if triton_version() is None:
        raise UserError("kernels: Triton is not installed (pip install 'perfgate[kernels]')")
    unknown = [a for a in args.arch or [] if a not in ARCHS]
    if unknown:
        raise UserError(f"kernels: --arch {unknown[0]}: not one of {', '.join(ARCHS)}")
    root = repo_root(args.repo)
    shas = {"base": resolve(root, args.base), "head": resolve(root, args.head)}
    with Checkouts(root, root / ".perfgate") as checkouts:
        trees = {side: checkouts.add(side, getattr(args, side), sha).path
                 for side, sha in shas.items()}
        configured = list(load(trees["base"])[0].gpu_arch)  # the base's policy, as a compare's
        captures = {side: run(args.capture, root, source_paths(root))
                    for side, root in trees.items()} if args.capture else {}
        section = analyse(trees, archs_for(args.arch or configured, None),
                          captured={side: c["records"] for side, c in captures.items()})
    if captures:
        section["capture"] = {side: {"command": args.capture, "launches": len(c["records"]),
                                     "exit": c["exit"], "output": c["output"]}
                              for side, c in captures.items()}
    section["shas"] = shas
    print("\n".join(lines(section)))
    if args.json:
        Path(args.json).write_text(json.dumps(section, indent=1) + "\n")
    return 0

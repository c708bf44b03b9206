"""Harvest candidate pull requests for ``intent_real.jsonl`` from a repository's git history.

Usage:
    python evaluation/harvest_prs.py --git DIR --repo OWNER/NAME --out FILE [--limit N] [--seed S]
        [--strict] [--synced OWNER/NAME=SHORT] [--skip FILE ...]

Reads the first-parent history of ``DIR`` (a bare clone or a ``.git`` directory) and finds
merged pull requests: squash merges whose subject ends in ``(#N)`` and merge commits
``Merge pull request #N from ...`` (title: the first line of the message body). Pull requests
already in ``intent_real.jsonl`` are skipped. It keeps every pull request whose title or message
uses performance wording (``PERF_WORDS``) and, for the share of non-optimisations a labelled
corpus needs, a seeded random tenth of the others; then a seeded sample of ``--limit``.
With ``--strict`` it keeps only pull requests whose *title* says they are about speed
(``STRONG_PERF``). With ``--synced ggml-org/llama.cpp=llama`` it reads the commits that a
repository synced from another one (ggml's ``... (llama/N)``) as that repository's pull requests.
A pull request whose commits the snapshot lacks is skipped.

Each output line is a *candidate*, not a corpus row: ``source``, ``url``, ``title``, ``message``
(the commit message without trailers, for the labeller to paraphrase; it is never copied into
the corpus), ``files``, ``n_files`` and ``diff``. The diff excerpt is chosen mechanically, as the
classifier chooses it at run time (``runner.intent.diff.excerpt``): ``git diff -U0`` against the
first parent, library source files first, then the library's other files, then test /
benchmark / docs / example files, whole hunks in diff order until 60 changed lines (a first hunk
longer than that is cut at 60), each line cut at 200 characters, lines with an e-mail address
dropped, ``TODO(name)`` shortened to ``TODO``. Rows of rounds 1-3 were cut by the older rule
(library files before the rest, in diff order), which gives the same lines for 95 % of them.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
CORPUS = HERE / "intent_real.jsonl"

from runner.intent import diff as _diff  # noqa: E402

SQUASH = re.compile(r"^(?P<title>.+?)\s*\(#(?P<n>\d+)\)\s*$")
MERGE = re.compile(r"^Merge pull request #(?P<n>\d+) from \S+")
#: A commit synced from another repository that names its pull request as ``(name/N)``
#: (ggml's copies of llama.cpp pull requests: ``CUDA: faster FA ... (llama/19092)``).
SYNCED = re.compile(r"^(?P<title>.+?)\s*\((?P<name>[\w.-]+)/(?P<n>\d+)\)\s*$")
#: Title wording of a change that says it is about speed (``--strict``).
STRONG_PERF = re.compile(
    r"\b(perf|performance|speed\w*|fast|faster|fastest|optimi[sz]\w*|accelerat\w*|latency|throughput|"
    r"overhead|efficien\w*|fuse[ds]?|fusion|vectori[sz]\w*|coalesc\w*|occupancy|autotun\w*|"
    r"cuda ?graphs?|persistent|bandwidth|tun(e|ed|ing)|avoid\w*|reduce[ds]? (the )?(number|sync|cop|launch|"
    r"overhead|memory traffic|host)\w*|\d+(\.\d+)?x)\b", re.IGNORECASE)
PERF_WORDS = re.compile(
    r"\b(perf\w*|speed\w*|fast\w*|faster|slow\w*|optimi[sz]\w*|latency|throughput|overhead|"
    r"fuse[ds]?|fusion|fusing|cache[ds]?|caching|avoid\w*|reduce[ds]?|redundant|vectori[sz]\w*|"
    r"coalesc\w*|shared memory|smem|tile[ds]?|tiling|occupancy|registers?|spill\w*|warps?|"
    r"shuffle|atomic\w*|autotun\w*|tun(e|ed|ing)|cublas\w*|cudnn|cutlass|sync\w*|\.item\(\)|"
    r"streams?|overlap\w*|prefetch\w*|graphs?|launch\w*|allocat\w*|workspace|memcpy|copy|copies|"
    r"in-place|inplace|contiguous|bf16|fp16|fp8|tf32|half|precision|block size|num_warps|"
    r"num_stages|split-?k|persistent|bandwidth|TFLOPS|GB/s|x speedup)\b",
    re.IGNORECASE)
TRAILER = re.compile(r"^(signed-off-by|co-authored-by|reviewed-by|approved-by|ghstack|pull request resolved|"
                     r"differential revision|reviewed by|test plan|summary):?", re.IGNORECASE)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
MAX_LINES = _diff.EXCERPT_LINES
MAX_CHARS = _diff.EXCERPT_CHARS


def git(gitdir: str, *args: str) -> str:
    """Output of ``git --git-dir=gitdir args`` (UTF-8, undecodable bytes replaced).

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    out = subprocess.run(["git", f"--git-dir={gitdir}", *args], check=True, capture_output=True)
    return out.stdout.decode("utf-8", "replace")


def merged_prs(gitdir: str, synced: str = "") -> list[dict]:
    """``[{sha, parent, number, title, message}]`` of the first-parent history, newest first.

    With ``synced`` (a repository's short name, e.g. ``llama``), only commits synced from that
    repository (``SYNCED``) are read, and ``number`` is its pull request's number.
    """
    log = git(gitdir, "log", "--first-parent", "--format=%H %P%x00%s%x00%b%x1e", "HEAD")
    found = []
    for record in log.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        head, subject, body = (record.split("\x00") + ["", ""])[:3]
        shas = head.split()
        if len(shas) < 2:
            continue
        body_lines = body.splitlines()
        if synced:
            m = SYNCED.match(subject)
            if not m or m["name"] != synced:
                continue
            title = m["title"]
        elif (m := SQUASH.match(subject)):
            title = m["title"]
        else:
            m = MERGE.match(subject)
            if not m:
                continue
            title = next((ln.strip() for ln in body_lines if ln.strip()), "")
            body_lines = body_lines[[ln.strip() for ln in body_lines].index(title) + 1:] if title else body_lines
        message = "\n".join(ln for ln in body_lines if not TRAILER.match(ln.strip()) and not EMAIL.search(ln))
        found.append({"sha": shas[0], "parent": shas[1], "number": int(m["n"]),
                      "title": title.strip(), "message": message.strip()[:3000]})
    return found


def excerpt(diff: str) -> str:
    """The mechanical diff excerpt of a ``git diff -U0`` text: ``runner.intent.diff.excerpt`` (what
    the classifier reads at run time), lines with an e-mail address dropped, ``TODO(name)``
    shortened to ``TODO``."""
    return _diff.excerpt(re.sub(r"TODO\([^)]*\)", "TODO", diff), MAX_LINES, MAX_CHARS,
                         keep=lambda line: not EMAIL.search(line))


def candidate(gitdir: str, repo: str, pr: dict) -> dict:
    """One candidate row of ``pr`` (a ``merged_prs`` entry) with its files and diff excerpt."""
    names = [f for f in git(gitdir, "diff", "--name-only", pr["parent"], pr["sha"]).splitlines() if f]
    diff = git(gitdir, "diff", "-U0", "--no-color", "--no-ext-diff", pr["parent"], pr["sha"])
    return {"source": f"{repo}#{pr['number']}", "url": f"https://github.com/{repo}/pull/{pr['number']}",
            "title": pr["title"], "message": pr["message"], "files": names[:40], "n_files": len(names),
            "diff": excerpt(diff), "state": "merged", "origin": "snapshot"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--git", required=True, help="git directory of the repository snapshot")
    parser.add_argument("--repo", required=True, help="owner/name")
    parser.add_argument("--out", required=True, help="JSON-lines file to append candidates to")
    parser.add_argument("--limit", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", action="append", default=[], help="other candidate files whose sources to skip")
    parser.add_argument("--strict", action="store_true",
                        help="only pull requests whose title says they are about speed (STRONG_PERF)")
    parser.add_argument("--synced", default="", metavar="OWNER/NAME=SHORT",
                        help="read commits synced from OWNER/NAME, marked (SHORT/N), as its pull requests")
    args = parser.parse_args(argv)
    repo, short = args.repo, ""
    if args.synced:
        repo, short = args.synced.split("=", 1)
    known = {json.loads(ln)["source"] for ln in CORPUS.read_text(encoding="utf-8").splitlines() if ln.strip()}
    for path in args.skip:
        known |= {json.loads(ln)["source"] for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()}
    rng = random.Random(f"{args.seed}:{repo}")
    prs = [p for p in merged_prs(args.git, short) if f"{repo}#{p['number']}" not in known]
    if args.strict:
        perf = [p for p in prs if STRONG_PERF.search(p["title"])]
        pool = list(perf)
    else:
        perf = [p for p in prs if PERF_WORDS.search(p["title"] + "\n" + p["message"])]
        others = [p for p in prs if not PERF_WORDS.search(p["title"] + "\n" + p["message"])]
        pool = perf + rng.sample(others, len(others) // 10)
    rng.shuffle(pool)
    written = 0
    with open(args.out, "a", encoding="utf-8") as out:
        for pr in pool:
            if written == args.limit:
                break
            try:
                row = candidate(args.git, repo, pr)
            except subprocess.CalledProcessError:
                continue        # a snapshot without this commit's objects (a shallow or partial copy)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            written += 1
    print(f"{repo}: {len(prs)} merged pull requests, {len(perf)} with performance wording, "
          f"{written} written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compile jobs in a worker process (:mod:`runner.kernels.worker`) with a time limit per job: a
compiler that hangs is killed and costs its one job, a crash costs the job it was on, and the
others go on in a fresh worker. Jobs not begun before the deadline are answered ``skipped``.

A thin shell: starting, reading and killing processes; what the answers mean is decided by
:mod:`runner.kernels.table`.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Callable

from ..sandbox.child_env import child_environment

#: Seconds one job (one kernel, one specialisation, one arch) may take. ptxas takes about a
#: minute on a 2-CPU machine for a 256x256x64 fp16 matmul tile that spills on sm_90.
JOB_TIMEOUT = 180.0

_ROOT = str(Path(__file__).resolve().parents[2])


def _start(python: str, triton_cache: Path, jobs: list[dict]) -> tuple[subprocess.Popen, IO]:
    """A worker reading ``jobs`` from a file and writing what the target's code prints to
    another (returned): only its answers come through a pipe, which this process reads as they
    come. (With the jobs written into its stdin pipe, 300 captured launches' jobs filled both
    pipes: the worker waited to write an answer, this process to write a job, for ever.)"""
    env = child_environment(PYTHONPATH=_ROOT, TRITON_CACHE_DIR=str(triton_cache),
                            PYTHONDONTWRITEBYTECODE="1")
    errors = tempfile.TemporaryFile("w+")
    with tempfile.TemporaryFile("w+") as given:
        given.write("".join(json.dumps(j) + "\n" for j in jobs))
        given.seek(0)
        proc = subprocess.Popen([python, "-m", "runner.kernels.worker"], stdin=given,
                                stdout=subprocess.PIPE, stderr=errors, env=env, text=True,
                                start_new_session=True)
    return proc, errors


def _stop(proc: subprocess.Popen, errors: IO) -> str:
    """Kill the worker's process group; the tail of what it wrote to stderr."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    proc.stdout.close()
    errors.seek(0)
    tail = errors.read()[-4000:]
    errors.close()
    return "\n".join(tail.strip().splitlines()[-3:])


def run_jobs(jobs: list[dict], triton_cache: Path, *, python: str = sys.executable,
             timeout: float = JOB_TIMEOUT, deadline: float = float("inf"),
             on_answer: Callable[[str, dict], None] | None = None) -> dict[str, dict]:
    """Each job's answer by its ``id`` (see :mod:`runner.kernels.worker`); a job that ran past
    ``timeout`` seconds or whose worker died is ``{ok: False, stage: "timeout" | "crash",
    error}``; one not begun before ``deadline`` (monotonic seconds) ``{ok: False, stage:
    "skipped"}``. ``on_answer(id, answer)`` is called as each compiled answer arrives (the
    cache keeps it then: a run stopped later keeps what it compiled)."""
    answers: dict[str, dict] = {}
    pending = list(jobs)
    while pending:
        if time.monotonic() >= deadline:
            break
        proc, errors = _start(python, triton_cache, pending)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while pending:
            wait = min(timeout, deadline - time.monotonic())
            line = proc.stdout.readline() if sel.select(max(0.0, wait)) else None
            if line:
                answer = json.loads(line)
                answers[answer["id"]] = answer
                if on_answer is not None:
                    on_answer(answer["id"], answer)
                pending = [j for j in pending if j["id"] != answer["id"]]
                continue
            job = pending.pop(0)
            stage = ("crash" if line == "" else
                     "skipped" if time.monotonic() >= deadline else "timeout")
            why = _stop(proc, errors)
            answers[job["id"]] = {"ok": False, "stage": stage, "error": (
                f"the compiler ran past {timeout:.0f} s and was stopped" if stage == "timeout"
                else f"the compiler's process died: {why or 'no message'}" if stage == "crash"
                else "not compiled: the static pass's time was spent")}
            break
        else:
            _stop(proc, errors)
        sel.close()
    for job in pending:
        answers[job["id"]] = {"ok": False, "stage": "skipped",
                              "error": "not compiled: the static pass's time was spent"}
    return answers

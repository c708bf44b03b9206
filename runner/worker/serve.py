"""The worker side: one fork server per revision, one fresh child per benchmark and process pair.

Run as ``python -m runner.worker --sys-path P [--sys-path P ...] --device D [--cpus 1,2]
[--triton-cache DIR]`` with the revision's worktree as the working directory;
:mod:`runner.pipeline.timing.workers` is the parent side.

Why a fork server. A benchmark's speed must not depend on what ran before it in the same
process: glibc's dynamic mmap threshold, the heap's free lists, Python's own allocator and
torch's caching allocator all carry history (seen: an untouched ``loss`` benchmark 45 % faster
in one worker because the benchmark before it no longer allocated 25 MB per call). So every
benchmark, and every process pair of a benchmark, runs in a fresh process, the same on both
sides (as pyperf and asv do). Starting Python and importing torch costs 1–3 s; the fork server
pays that once per side and forks a child per request in a few milliseconds. Every child of a
side starts from the same parent state, so no child sees another's history.

What the server must never do, because a forked child would inherit it broken: initialise CUDA
(CUDA does not survive ``fork``) or start threads (GNU OpenMP's pool hangs in a forked child;
measured here: a parallel ``a @ a`` in the parent, then any parallel op in the child, hangs).
Nor should it hold the benchmarks' data: every child would share it at the same physical pages
(:data:`PRELOAD_MAX_DATA_BYTES`). It therefore imports torch but runs nothing. ``preload``
imports the benchmark files into the server (so a heavy library is imported once, not once per
child) and then checks these conditions; when a file's import started a thread or CUDA or
allocated tensors, the server reports ``fork_safe: false`` and exits, and the parent starts a
new server without preloading (each child then imports the files itself).

Protocol: one JSON object per line, requests on standard input, responses on a private copy of
the original standard output (file descriptor 1 then points at standard error, so whatever
benchmarks print goes to the worker log and cannot corrupt the protocol). The server answers
``preload`` {dir, suite?, options?} and ``quit``; on ``fork`` it forks, and the *child* answers first
(``{ok, ready, pid}``) and then serves ``env``, ``list`` {dir, suite?, options?}, ``setup`` {dir, file,
func, name, suite?, case?, options?, min_sample_time, cold_cache, number?, warmup_samples?, warmup_seconds?},
``sample`` {count, number?}, ``measure`` {} (after the timing: the peak memory of one call and what
torch.compile did, :mod:`runner.worker.measures`), ``profile`` {trace_path, calls}, ``trace`` {the ``setup`` fields, root} (the code map: set-up and one
call under a tracer, :mod:`runner.worker.tracing`) until ``quit`` or end of input. ``suite``
names the convention (:mod:`runner.conventions`), ``case`` is the case as listed and ``options`` the
configuration keys the convention asks for. A case whose benchmark measures itself answers
``setup`` with ``self_measured: true`` and each ``sample`` with ``readings`` ``{name: {values, unit,
direction}}`` (one run of it) instead of timed samples. When the child has exited the
server writes ``{child_exited: pid, status}`` (status as ``os.waitstatus_to_exitcode``: negative
is the signal). Failures carry ``error`` (the traceback's last lines). The messages are typed in
:mod:`runner.protocol` (both ends import it); a child's requests are answered by :mod:`.child`, the
fork-safety checks live in :mod:`.forking`.

This is the only place (with runner.worker.profiling and the device modules the worker calls,
:mod:`runner.devices`) where torch is imported by perfgate.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys

from ..conventions.base import format_error
from ..protocol import Failure, Listing, ListRequest
from .child import Worker, list_suite
from .forking import fork_hazards, shift_heap, thread_count
from .caches import isolate_compile_caches, remove_compile_caches


class Channel:
    """Line-delimited JSON over two file descriptors, read without buffering ahead.

    The server and its children share the request descriptor; the parent sends a request only
    after the previous response, so a plain ``os.read`` never takes bytes meant for another
    process (a buffered reader in the server could swallow a child's request).
    """

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._buf = b""

    def requests(self):
        """Yield decoded request lines (str) until end of input."""
        while True:
            while b"\n" not in self._buf:
                chunk = os.read(self.read_fd, 65536)
                if not chunk:
                    return
                self._buf += chunk
            line, self._buf = self._buf.split(b"\n", 1)
            text = line.decode("utf-8", "replace").strip()
            if text:
                yield text

    def respond(self, obj: dict, new_line: bool = False) -> None:
        """Write ``obj`` as one line; ``new_line`` first ends any half-written line."""
        data = (("\n" if new_line else "") + json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(self.write_fd, data):]


_CHILD_REQUESTS = ("env", "list", "setup", "sample", "output", "measure", "profile", "trace")


def serve(worker: Worker, requests, respond) -> None:
    """A child's request loop (separate from the process plumbing, so it can be tested in-process)."""
    for line in requests:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "quit":
                return
            handler = getattr(worker, cmd, None) if cmd in _CHILD_REQUESTS else None
            if handler is None:
                respond(Failure(f"unknown request {cmd!r}").to_json())
                continue
            respond({"ok": True, **handler(req)})  # a handler answers a runner.protocol reply's JSON
        except BaseException as exc:  # noqa: BLE001 - the benchmark's failure is data
            if isinstance(exc, KeyboardInterrupt):
                raise
            respond(Failure(format_error(exc)).to_json())


def _run_child(chan: Channel, device: str, triton_cache: str | None = None) -> int:
    """Body of a forked child: a fresh process group (so the parent can kill whatever the
    benchmark spawned), its compile caches (``triton_cache``: the side's Triton cache), then the
    request loop."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    # The server froze its objects before the fork (gc.freeze) so that its own collections stay
    # cheap; the child unfreezes them at once, as a plain ``python`` process has them: otherwise a
    # benchmark's ``gc.collect()`` (or a full collection its allocations trigger) walks only its
    # own objects, not torch's, and costs a fraction of what it costs the user. Seen on a real
    # PR (accelerate #2914, a ``gc.collect()`` per call removed): ×0.0001 in fresh processes, ×0.4
    # here while the objects stayed frozen. The price is memory: a collection in the child touches
    # the server's objects and copies their pages.
    gc.unfreeze()
    shift_heap()
    # a cold torch.compile in every process, the side's Triton cache (runner.worker.caches)
    caches = isolate_compile_caches(triton_cache)
    try:
        worker = Worker(device, compile_cache=caches)
    except Exception as exc:  # noqa: BLE001
        remove_compile_caches(caches)
        chan.respond(Failure(str(exc), fatal=True).to_json())
        return 1
    chan.respond({"ok": True, "ready": True, "pid": os.getpid(), "device": worker.device})
    try:
        serve(worker, chan.requests(), chan.respond)
    finally:
        worker.close()
    return 0


def serve_forks(chan: Channel, device: str, triton_cache: str | None = None) -> None:
    """The fork server's loop: ``preload``, ``fork`` (a child serves until it quits), ``quit``."""
    threads_before = thread_count()
    for line in chan.requests():
        try:
            req = json.loads(line)
        except ValueError:
            chan.respond(Failure(f"not JSON: {line[:80]!r}").to_json())
            continue
        cmd = req.get("cmd")
        if cmd == "quit":
            chan.respond({"ok": True})
            return
        if cmd == "preload":
            try:
                asked = ListRequest.from_json(req)
                listing = list_suite(asked.dir, asked.suite, asked.options)
            except Exception as exc:  # noqa: BLE001 - a convention that cannot list: the compare says why
                chan.respond(Failure(format_error(exc)).to_json())
                continue
            hazards = fork_hazards(threads_before, data_check=True)
            chan.respond({**listing, **Listing(listing["benchmarks"], listing["errors"], listing.get("skipped") or [],
                                                fork_safe=not hazards, hazards=hazards).to_json()})
            if hazards:
                return  # a child of this process could hang or break; the parent starts a new server
            continue
        if cmd != "fork":
            chan.respond(Failure(f"unknown request {cmd!r}").to_json())
            continue
        gc.collect()
        gc.freeze()  # keep the server's objects out of the children's collections (no copy-on-write)
        try:
            pid = os.fork()
        except OSError as exc:
            chan.respond(Failure(f"fork failed: {exc}").to_json())
            continue
        if pid == 0:
            code = 1
            try:
                code = _run_child(chan, device, triton_cache)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        # A leading newline ends whatever line a killed child left half-written.
        chan.respond({"child_exited": pid, "status": code}, new_line=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.worker")
    parser.add_argument("--sys-path", action="append", default=[])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--cpus", default="", help="comma-separated CPU ids to pin this worker to")
    parser.add_argument("--triton-cache", default=None,
                        help="this side's Triton cache folder, shared by its children "
                             "(runner.worker.caches)")
    args = parser.parse_args(argv)

    if args.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for p in reversed(args.sys_path):
        sys.path.insert(0, p)
    chan = Channel(0, proto_fd)
    try:
        import torch  # noqa: F401 - preloads torch once here so that every child starts with it
    except ImportError:
        pass
    except Exception as exc:  # noqa: BLE001 - a broken torch install is the user's to fix
        chan.respond(Failure(f"import torch failed: {format_error(exc, 3)}", fatal=True).to_json())
        return 1
    chan.respond({"ok": True, "ready": True, "server": True, "pid": os.getpid()})
    serve_forks(chan, args.device, args.triton_cache)
    return 0

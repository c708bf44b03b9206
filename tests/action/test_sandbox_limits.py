"""The sandbox's limits with the real bubblewrap and the real kernel (:mod:`runner.sandbox.limits`,
:mod:`runner.sandbox.confine`, :func:`action.sandboxed.run_confined`): a fork bomb, a write past the
scratch space, memory past its limit and a hang each end the sandboxed step with the error that
names their limit, the test process (the runner) goes on, and the next sandboxed step works."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from action.sandboxed import run_confined
from runner.sandbox import confine, bubblewrap as sandbox, seccomp
from runner.sandbox.limits import GIB, Limits

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
SMALL = Limits(pids=64, memory=2 * GIB, disk=16 << 20, wall=120.0)


def _spec(tmp_path: Path) -> sandbox.SandboxSpec:
    owner = sandbox.drop_to_for()
    scratch = sandbox.make_scratch(tmp_path / "jail", owner)
    out = sandbox.make_writable(scratch / "out", owner)
    return sandbox.SandboxSpec(read_only=(*sandbox.interpreter_paths(),), writable=(str(out),),
                               scratch=str(scratch), chdir="/", drop_to=owner,
                               seccomp=seccomp.write_userns_filter(scratch))


def _run(tmp_path: Path, code: str, limits: Limits = SMALL):
    spec = _spec(tmp_path)
    lines: list[str] = []
    start = time.monotonic()
    outcome = run_confined(spec, [sys.executable, "-c", code], limits, Path(spec.writable[0]),
                           "perfgate compare", env=ENV, say=lines.append)
    return outcome, time.monotonic() - start, lines


def _runs(proc_dir: Path, mark: str) -> bool:
    try:
        return mark.encode() in (proc_dir / "cmdline").read_bytes()
    except OSError:
        return False


def _then_a_sandboxed_step_still_works(tmp_path: Path) -> None:
    outcome, _, _ = _run(tmp_path / "after", "print('fine')")
    assert outcome.status == 0 and outcome.stopped is None, outcome.stderr_tail


def test_a_fork_bomb_ends_the_step_with_the_process_limit(tmp_path):
    bomb = ("import os\nwhile True:\n    try:\n        os.fork()\n"
            "    except OSError:\n        pass\n")
    outcome, seconds, said = _run(tmp_path, bomb)
    assert said[0].startswith("perfgate: sandbox limits: 64 processes")
    assert outcome.status == 2, outcome.stderr_tail
    assert "process limit (64 processes and threads, input sandbox-pids)" in outcome.last_error_line
    assert "perfgate compare" in outcome.last_error_line
    assert seconds < SMALL.wall  # ended by the limit, long before the deadline
    _then_a_sandboxed_step_still_works(tmp_path)


def test_a_write_past_the_scratch_space_ends_with_the_disk_limit(tmp_path):
    write = ("import sys\ntry:\n    with open('/tmp/big', 'wb') as f:\n"
             "        for _ in range(64):\n            f.write(b'x' * (1 << 20))\n"
             "except OSError as exc:\n    print(exc, file=sys.stderr)\n    sys.exit(3)\n")
    outcome, seconds, _ = _run(tmp_path, write)
    assert outcome.status == 2, outcome.stderr_tail
    assert "scratch-space limit (16 MiB for /tmp and HOME, input sandbox-disk)" in \
        outcome.last_error_line
    assert not (Path(tmp_path) / "jail" / "tmp" / "big").exists()  # not on the runner's disk
    _then_a_sandboxed_step_still_works(tmp_path)


def test_a_full_scratch_is_named_with_what_the_compare_was_doing_when_it_filled(tmp_path):
    """A benchmark that meets ENOSPC fails and the compare goes on to finish (status 0): the
    warning names the benchmark of the progress record when the scratch was first seen full,
    not the record's last word (the compare writing its results)."""
    out = tmp_path / "jail" / "out"  # _spec's results folder
    fill = (f"import json, os, time\nos.makedirs('{out}/logs', exist_ok=True)\n"
            "def note(**record):\n"
            f"    open('{out}/logs/progress.json', 'w').write(json.dumps(record))\n"
            "note(phase='measuring', side='head', benchmark='bench_fill')\n"
            "try:\n    with open('/tmp/big', 'wb') as f:\n"
            "        for _ in range(64):\n            f.write(b'x' * (1 << 20))\n"
            "except OSError:\n    pass\n"
            "time.sleep(3)\nnote(phase='finishing', side=None, benchmark=None)\n")
    outcome, _, said = _run(tmp_path, fill)
    assert outcome.status == 0 and said[-1].startswith("::warning::"), (outcome, said)
    assert "scratch-space limit (16 MiB" in said[-1]
    assert said[-1].endswith("while the benchmark 'bench_fill' was measured on head")


def test_a_scratch_filled_in_the_steps_last_moment_is_seen_full_all_the_same(tmp_path):
    """The watch looks once a second; a benchmark that fills the scratch just before the compare
    ends is seen by the last look, at the tmpfs held open after the sandbox ended."""
    fill = ("try:\n    with open('/tmp/big', 'wb') as f:\n"
            "        for _ in range(64):\n            f.write(b'x' * (1 << 20))\n"
            "except OSError:\n    pass\n")
    for attempt in range(3):  # the fill lands between two looks: 1.5 s in, then it exits
        outcome, _, said = _run(tmp_path / str(attempt), "import time\ntime.sleep(1.5)\n" + fill)
        assert outcome.status == 0 and said[-1].startswith("::warning::"), (outcome, said)
        assert "scratch-space limit (16 MiB" in said[-1]


def test_without_a_sized_tmpfs_each_file_is_bounded_all_the_same(tmp_path, monkeypatch):
    """bubblewrap 0.6 (Ubuntu 22.04) has no ``--size``: the scratch stays on the runner's disk
    and RLIMIT_FSIZE ends a file at the limit (EFBIG), named as the scratch-space limit."""
    monkeypatch.setattr(confine, "_sized_tmpfs", lambda bwrap: False)
    write = ("import sys\ntry:\n    open('/tmp/big', 'wb').write(b'x' * (64 << 20))\n"
             "except OSError as exc:\n    print(exc, file=sys.stderr)\n    sys.exit(3)\n")
    outcome, _, said = _run(tmp_path, write)
    assert "no --size" in said[0]
    assert outcome.status == 2 and "File too large" in outcome.last_error_line
    assert "scratch-space limit (16 MiB" in outcome.last_error_line
    assert (tmp_path / "jail" / "tmp" / "big").stat().st_size <= 16 << 20


def test_a_hang_ends_at_the_deadline_with_every_process_killed(tmp_path):
    mark = f"perfgate-hang-{os.getpid()}-{time.time_ns()}"
    hang = ("import subprocess, time\n"
            f"subprocess.Popen(['sh', '-c', 'exec -a {mark} sleep 600'], start_new_session=True)\n"
            "time.sleep(600)\n")
    limits = Limits(pids=64, memory=2 * GIB, disk=16 << 20, wall=3.0)
    outcome, seconds, _ = _run(tmp_path, hang, limits)
    assert outcome.status == 2 and outcome.stopped == "deadline"
    assert "wall-time limit (3 s, input sandbox-time)" in outcome.last_error_line
    assert seconds < limits.wall + 60
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p, mark)]
    _then_a_sandboxed_step_still_works(tmp_path)


def test_memory_past_the_limit_ends_with_the_memory_limit(tmp_path):
    grow = "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))\n"
    limits = Limits(pids=64, memory=256 << 20, disk=16 << 20, wall=120.0)
    outcome, seconds, _ = _run(tmp_path, grow, limits)
    assert outcome.status == 2, outcome.stderr_tail
    assert "memory limit (256 MiB, input sandbox-memory)" in outcome.last_error_line
    _then_a_sandboxed_step_still_works(tmp_path)


def test_this_machine_offers_what_the_limits_need():
    """The mechanism each limit gets here (the review saw the sandbox in the root cgroup)."""
    offered = confine.offers(sandbox.drop_to_for())
    with confine.Confinement(SMALL, offered) as confinement:
        how = dict(confinement.plan.how)
        assert confinement.folders or "RLIMIT" in how["pids"]
    assert all(not folder.exists() for folder in confinement.folders)


def test_with_a_scratch_size_tmp_and_home_are_one_tmpfs_given_to_the_sandboxs_user():
    spec = sandbox.SandboxSpec(read_only=(), writable=(), scratch="/s", chdir="/",
                               scratch_size=1 << 30, drop_to=(65534, 65534))
    argv = sandbox.bwrap_argv(spec, ["true"])
    at = argv.index("--tmpfs")
    assert argv[at - 2:at + 2] == ["--size", str(1 << 30), "--tmpfs", "/tmp"]
    assert ("--symlink", sandbox.TMPFS_HOME, sandbox.SANDBOX_HOME) in zip(argv, argv[1:], argv[2:])
    assert "/s/tmp" not in argv and "/s/home" not in argv  # nothing of the runner's disk
    # bubblewrap mounts it as root: perfgate's chown before setpriv drops to nobody
    tail = argv[argv.index("--") + 1:]
    chown = f'chown 65534:65534 {sandbox.TMPFS_HOME} /tmp && exec "$@"'
    assert tail[:3] == ["/bin/sh", "-c", chown]
    assert tail[4] == "setpriv" and "CAP_CHOWN" in argv
    user = sandbox.bwrap_argv(sandbox.SandboxSpec(read_only=(), writable=(), scratch="/s",
                                                  chdir="/", scratch_size=1 << 30), ["true"])
    assert "CAP_CHOWN" not in user and "chown" not in " ".join(user)


#: The head's module whose ``go("benchmark")`` starts a fork bomb: a fresh interpreter without
#: torch (a process that imported torch forks in tens of milliseconds on a loaded machine,
#: slower than the benchmark's own time-out) that forks without end, waited for.
BOMB = '''\
import os
import sys

LOOP = ("import os\\nwhile True:\\n    try:\\n        os.fork()\\n"
        "    except OSError:\\n        pass\\n")


def go(where):
    if where == "benchmark":
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-S", "-c", LOOP])
        os.wait()
'''


#: The head's benchmark file that forks without end when its benchmark runs (not on import).
BOMB_WHEN_CALLED = ("import bomb\nimport work\n\n\n"
                    "def bench_sum(device):\n    return lambda: bomb.go(\"benchmark\")\n")


@pytest.mark.slow
@pytest.mark.parametrize("when, doing", [
    ("import", "while head's benchmark files were imported and listed"),
    ("call", "while the benchmark 'bench_sum' was measured on head")])
def test_a_benchmark_that_fork_bombs_fails_the_action_with_the_process_limit(
        tmp_path, fake_github, capsys, when, doing):
    """The whole Action, a real ``perfgate compare`` in the real sandbox: the head's benchmark
    module forks without end, on import or when its benchmark is called; the step ends with the
    limit named, and what the compare was doing (the benchmark, its side, the phase: its progress
    record), and the runner goes on."""
    from action.__main__ import main
    from tests.action.events import workflow_dispatch
    from tests.action.harness import actions_env
    from tests.action.target_repo import probing_files, two_commit_repo

    checkout = tmp_path / "checkout"
    head = {"bomb.py": BOMB, **({"benchmarks/bench_work.py": BOMB_WHEN_CALLED}
                                if when == "call" else {})}
    base_sha, head_sha = two_commit_repo(tmp_path / "origin", checkout,
                                         probing_files("bomb", "go"), head)
    fake_github.state.add_pull("octo/demo", 7, head_sha=head_sha, base_sha=base_sha)
    event = workflow_dispatch(base_sha=base_sha, head_sha=head_sha, pr_number=7, run_id="pg-7")
    env = actions_env(tmp_path / "job", api_url=fake_github.url, workspace=checkout,
                      event_name="workflow_dispatch", event=event, github_token="ghs_any",
                      sandbox_pids="256", sandbox_time="10m", sandbox_disk="256MiB")
    env["GITHUB_SHA"] = base_sha
    start = time.monotonic()
    assert main(env) == 2
    seconds = time.monotonic() - start
    out = capsys.readouterr().out
    errors = [line for line in out.splitlines() if line.startswith("::error")]
    assert len(errors) == 1
    assert "process limit (256 processes and threads, input sandbox-pids)" in errors[0]
    assert "in perfgate compare" in errors[0] and seconds < 600  # the deadline was 10 min
    assert doing in errors[0], errors[0]
    _then_a_sandboxed_step_still_works(tmp_path)

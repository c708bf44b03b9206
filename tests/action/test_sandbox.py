"""runner.sandbox: the bubblewrap command line (pure), the laundering of what leaves the sandbox,
and — with the real bwrap — what the code inside can and cannot do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner import sandbox
from action.environment import ActionInputError, parse_paths

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _spec(tmp_path: Path, **kw) -> sandbox.SandboxSpec:
    scratch = sandbox.make_scratch(tmp_path / "jail")
    out = scratch / "out"
    out.mkdir(exist_ok=True)
    values = dict(read_only=(*sandbox.interpreter_paths(), *sandbox.perfgate_source_paths()),
                  writable=(str(out),), scratch=str(scratch), chdir="/tmp")
    values.update(kw)
    return sandbox.SandboxSpec(**values)


def test_bwrap_argv_mounts_in_an_order_where_listed_paths_win(tmp_path):
    spec = sandbox.SandboxSpec(read_only=("/tmp/runner/_work/repo",), writable=("/tmp/runner/_temp/x/out",),
                               scratch="/s", chdir="/tmp", devices=("/dev/nvidia0",))
    argv = sandbox.bwrap_argv(spec, ["python", "-m", "runner.cli", "compare"], bwrap="/usr/bin/bwrap")
    assert argv[0] == "/usr/bin/bwrap" and argv[-4:] == ["python", "-m", "runner.cli", "compare"]
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--new-session", "--die-with-parent",
                 "--disable-userns"):
        assert flag in argv
    position = {tuple(argv[i:i + 3]): i for i in range(len(argv) - 2)}
    tmp = position[("--bind", "/s/tmp", "/tmp")]
    repo = position[("--ro-bind-try", "/tmp/runner/_work/repo", "/tmp/runner/_work/repo")]
    out = position[("--bind", "/tmp/runner/_temp/x/out", "/tmp/runner/_temp/x/out")]
    gpu = position[("--dev-bind-try", "/dev/nvidia0", "/dev/nvidia0")]
    assert tmp < repo < gpu < out  # a listed path under /tmp stays visible over the scratch /tmp
    assert argv.index("--remount-ro") > out and argv[argv.index("--remount-ro") + 1] == "/"
    assert "/home" not in argv and not any(a.startswith("/run") for a in argv)  # not listed: not there


def test_the_sandbox_environment_has_its_own_home_and_temporary_folder():
    env = sandbox.sandbox_environment({"PATH": "/usr/bin", "HOME": "/home/runner", "TMPDIR": "/runner/tmp",
                                       "XDG_RUNTIME_DIR": "/run/user/1000"})
    assert env["HOME"] == sandbox.SANDBOX_HOME and env["TMPDIR"] == "/tmp" and "XDG_RUNTIME_DIR" not in env


@pytest.mark.parametrize("value, message", [("relative/path", "absolute paths"), ("/home", "may not show"),
                                             ("/run/", "may not show"), ("/opt/ok:/tmp", "may not show")])
def test_sandbox_paths_input_refuses_what_would_open_the_sandbox(value, message):
    with pytest.raises(ActionInputError, match=message):
        parse_paths(value, "sandbox-paths")
    assert parse_paths("/opt/conda\n/usr/local/cuda-12:/data/models", "sandbox-paths") == (
        "/opt/conda", "/usr/local/cuda-12", "/data/models")


def test_launder_copies_regular_files_and_nothing_that_points_elsewhere(tmp_path):
    source, target = tmp_path / "out", tmp_path / "artifact"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN")
    (source / "traces" / "base").mkdir(parents=True)
    (source / "results.json").write_text("{}")
    (source / "traces" / "base" / "t.json.gz").write_bytes(b"\x1f\x8b")
    (source / "leak.txt").symlink_to(secret)
    (source / "leak-dir").symlink_to(tmp_path)
    os.mkfifo(source / "hang.fifo")
    inner = source / "inner.txt"
    inner.write_text("mine")
    os.link(inner, source / "twice.txt")
    big = source / "big.bin"
    big.write_bytes(b"x" * 5000)
    done = sandbox.launder(source, target, max_bytes=4000)
    copied = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert copied == ["results.json", "traces/base/t.json.gz"]
    assert not any(p.is_symlink() for p in target.rglob("*"))
    reasons = " ".join(done.skipped)
    for why in ("leak.txt (a symbolic link)", "leak-dir (a symbolic link)", "hang.fifo (not a regular file)",
                "inner.txt (a hard link)", "twice.txt (a hard link)", "big.bin (over the size limit)"):
        assert why in reasons, reasons
    assert done.files == 2 and "TOKEN" not in "".join(p.read_text("latin-1") for p in target.rglob("*") if p.is_file())


def test_probe_names_what_is_missing():
    with pytest.raises(sandbox.SandboxUnavailable, match="not installed"):
        sandbox.probe("perfgate-no-such-bwrap")


def _inside(spec: sandbox.SandboxSpec, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    argv = sandbox.bwrap_argv(spec, [sys.executable, "-c", code], bwrap=shutil.which("bwrap"))
    env = sandbox.sandbox_environment({"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


@needs_bwrap
def test_inside_only_the_listed_paths_exist_and_only_the_writable_ones_take_writes(tmp_path):
    hidden = tmp_path / "runner-temp" / "_runner_file_commands"
    hidden.mkdir(parents=True)
    (hidden / "set_env_1").write_text("")
    clone = tmp_path / "clone"
    (clone / ".git").mkdir(parents=True)
    (clone / ".git" / "config").write_text("[core]\n")
    spec = _spec(tmp_path, read_only=(*sandbox.interpreter_paths(), str(clone)))
    private = f"perfgate-private-{os.getpid()}-{time.time_ns()}"
    code = f'''
import os, json
out = {str(Path(spec.writable[0]))!r}
result = {{}}
result["hidden"] = os.path.exists({str(hidden)!r})
result["clone"] = os.path.exists({str(clone / ".git" / "config")!r})
for name, path in (("clone", {str(clone / ".git" / "config")!r}), ("interpreter", os.path.join(os.path.dirname(os.__file__), "zz.pth")),
                   ("root", "/evil"), ("out", os.path.join(out, "ok")), ("tmp", "/tmp/{private}"), ("home", os.path.expanduser("~/ok"))):
    try:
        open(path, "a").write("x")
        result["write_" + name] = True
    except OSError:
        result["write_" + name] = False
result["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
result["home_real"] = os.path.exists({str(Path.home())!r} + "/.bashrc")
print(json.dumps(result))
'''
    proc = _inside(spec, code)
    assert proc.returncode == 0, proc.stderr
    import json

    seen = json.loads(proc.stdout)
    assert seen["hidden"] is False and seen["clone"] is True
    assert {k: v for k, v in seen.items() if k.startswith("write_")} == {
        "write_clone": False, "write_interpreter": False, "write_root": False, "write_out": True, "write_tmp": True,
        "write_home": True}
    assert max(seen["pids"]) < 10  # a PID namespace of its own: the runner's processes are not there
    assert (Path(spec.writable[0]) / "ok").read_text() == "x"  # the results folder is the one door out
    assert not (Path("/tmp") / private).exists()  # its /tmp is its own
    assert (Path(spec.scratch) / "tmp" / private).read_text() == "x"


@needs_bwrap
def test_a_setsid_daemon_dies_with_the_sandbox(tmp_path):
    mark = f"perfgate-daemon-{os.getpid()}-{time.time_ns()}"
    code = f'''
import os, subprocess
subprocess.Popen(["sh", "-c", "exec -a {mark} sleep 300"], start_new_session=True)
'''
    proc = _inside(_spec(tmp_path), code)
    assert proc.returncode == 0, proc.stderr
    time.sleep(0.5)
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, mark)]
    assert alive == []


def _cmdline_has(proc_dir: Path, mark: str) -> bool:
    try:
        return mark.encode() in (proc_dir / "cmdline").read_bytes()
    except OSError:
        return False


@needs_bwrap
def test_no_new_privileges_inside(tmp_path):
    proc = _inside(_spec(tmp_path), "print(open('/proc/self/status').read())")
    status = dict(line.split(":\t", 1) for line in proc.stdout.splitlines() if ":\t" in line)
    assert status["NoNewPrivs"].strip() == "1" and status["CapEff"].strip() == "0000000000000000"


@pytest.mark.gpu
@needs_bwrap
def test_the_gpu_is_reachable_inside(tmp_path):
    """On a CUDA machine the sandbox binds the device nodes: torch sees the GPU and runs a kernel,
    and NVML (what perfgate's telemetry reads) answers."""
    pytest.importorskip("torch")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    spec = _spec(tmp_path, devices=sandbox.gpu_devices())
    code = ("import torch, pynvml; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); "
            "pynvml.nvmlInit(); print(int(x.sum().item()), pynvml.nvmlDeviceGetCount())")
    proc = _inside(spec, code, timeout=300)
    assert proc.returncode == 0, proc.stderr
    total, count = proc.stdout.split()
    assert int(total) == 1 << 20 and int(count) >= 1

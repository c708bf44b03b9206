"""runner.sandbox.bubblewrap: the bubblewrap command line (pure), the laundering of what leaves the
sandbox, and — with the real bwrap — what the code inside can and cannot do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.sandbox import bubblewrap as sandbox, seccomp
from runner.sandbox.launder import launder
from action.environment import ActionInputError, parse_paths

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _spec(tmp_path: Path, **kw) -> sandbox.SandboxSpec:
    owner = sandbox.drop_to_for()
    scratch = sandbox.make_scratch(tmp_path / "jail", owner)
    out = sandbox.make_writable(scratch / "out", owner)
    values = dict(read_only=(*sandbox.interpreter_paths(), *sandbox.perfgate_source_paths()),
                  writable=(str(out),), scratch=str(scratch), chdir="/", drop_to=owner,
                  seccomp=seccomp.write_userns_filter(scratch))
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
    assert not any(a.startswith("/run") for a in argv) and "/etc" not in argv[argv.index("--remount-ro"):]
    assert ("--ro-bind-try", "/etc/passwd", "/etc/passwd") in position and ("--ro-bind-try", "/etc", "/etc") not in position
    assert position[("--ro-bind-try", "/proc/sys", "/proc/sys")] > argv.index("--proc")  # over the fresh /proc
    # the folders leading to a listed path are made 0755 (bubblewrap makes them 0700 as root)
    assert position[("--perms", "0755", "--dir")] < repo and ("--dir", "/tmp/runner/_work", "--perms") in position
    assert "--unshare-net" not in argv and "setpriv" not in argv
    # a runner that runs as root: no user namespace (its root would be the host's), setpriv drops to nobody
    root = sandbox.bwrap_argv(sandbox.SandboxSpec(read_only=(), writable=(), scratch="/s", chdir="/", network=False,
                                                  drop_to=(65534, 65534)), ["true"])
    assert "--unshare-user" not in root and "--unshare-net" in root
    assert root[root.index("--") + 1:] == ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                            "--inh-caps=-all", "--bounding-set=-all",
                                            "--no-new-privs", "--", "true"]
    # with a seccomp program, a shell opens it as descriptor 9 for bubblewrap's --seccomp 9
    filtered = sandbox.bwrap_argv(sandbox.SandboxSpec(read_only=(), writable=(), scratch="/s",
                                                      chdir="/", seccomp="/s/no-userns.bpf"),
                                  ["true"], bwrap="/usr/bin/bwrap")
    assert filtered[:5] == ["/bin/sh", "-c", 'exec "$@" 9<"$0"', "/s/no-userns.bpf",
                            "/usr/bin/bwrap"]
    assert filtered[filtered.index("--seccomp") + 1] == "9"
    assert sandbox.drop_to_for(0) == (65534, 65534) and sandbox.drop_to_for(1000) is None


def test_the_sandbox_environment_has_its_own_home_and_temporary_folder():
    env = sandbox.sandbox_environment({"PATH": "/usr/bin", "HOME": "/home/runner", "TMPDIR": "/runner/tmp",
                                       "XDG_RUNTIME_DIR": "/run/user/1000"})
    assert env["HOME"] == sandbox.SANDBOX_HOME and env["TMPDIR"] == "/tmp" and "XDG_RUNTIME_DIR" not in env


RUNNER_ENV = {"HOME": "/home/runner", "RUNNER_TEMP": "/opt/actions-runner/_work/_temp",
              "GITHUB_WORKSPACE": "/opt/actions-runner/_work/demo/demo"}


@pytest.mark.parametrize("value, message", [
    ("relative/path", "absolute paths"), ("/home", "may not show"), ("/run/", "may not show"),
    ("/opt/ok:/tmp", "may not show"), ("/home/runner", "may not show"), ("/home/runner/.ssh", "may not show"),
    ("/etc/../home", "may not show"), ("//home", "may not show"), ("/root", "may not show"),
    ("/var/run/docker.sock", "may not show"), ("/opt/actions-runner", "may not show"), ("/opt", "may not show"),
    ("/opt/actions-runner/_work/_temp/x", "may not show"), ("/", "may not show")])
def test_sandbox_paths_input_refuses_what_would_open_the_sandbox(value, message):
    """Resolved first (``..``, ``//``, links), then judged against what the sandbox keeps away:
    the home folder, the runner's folder above ``_work``, RUNNER_TEMP, /run, /root (red team)."""
    with pytest.raises(ActionInputError, match=message):
        parse_paths(value, "sandbox-paths", RUNNER_ENV)
    assert parse_paths("/opt/conda\n/usr/local/cuda-12:/data/models", "sandbox-paths", RUNNER_ENV) == (
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
    (source / "a\nb:c*.txt").write_text("upload-artifact refuses this name")
    deep = source.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("too deep")
    done = launder(source, target, max_bytes=4000, max_depth=32)
    copied = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert copied == ["results.json", "traces/base/t.json.gz"]
    assert any("(a name upload-artifact refuses)" in why for why in done.skipped)
    assert any("(more than 32 folders deep)" in why for why in done.skipped)
    assert not any(p.is_symlink() for p in target.rglob("*"))
    reasons = " ".join(done.skipped)
    for why in ("leak.txt (a symbolic link)", "leak-dir (a symbolic link)", "hang.fifo (not a regular file)",
                "inner.txt (a hard link)", "twice.txt (a hard link)", "big.bin (over the size limit)"):
        assert why in reasons, reasons
    assert done.files == 2 and "TOKEN" not in "".join(p.read_text("latin-1") for p in target.rglob("*") if p.is_file())


def test_launder_follows_no_folder_swapped_for_a_link_while_it_walks(tmp_path, monkeypatch):
    """The walk holds a descriptor of each folder: a folder renamed and replaced by a link to a
    secret folder after it was listed is still the folder that was listed (red team)."""
    source, target, secret = tmp_path / "out", tmp_path / "artifact", tmp_path / "secret"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "mine.txt").write_text("mine")
    secret.mkdir()
    (secret / "mine.txt").write_text("TOKEN")
    real_scandir = os.scandir

    def swap_then_scan(fd):
        if isinstance(fd, int) and os.path.isdir(source / "sub") and not (source / "sub").is_symlink():
            os.rename(source / "sub", source / "moved")
            os.symlink(secret, source / "sub")
        return real_scandir(fd)

    monkeypatch.setattr(os, "scandir", swap_then_scan)
    launder(source, target)
    assert "TOKEN" not in "".join(p.read_text() for p in target.rglob("*") if p.is_file())


def test_remove_tree_removes_a_tree_deeper_than_pythons_recursion(tmp_path):
    (tmp_path / "jail").mkdir()
    fd = os.open(tmp_path / "jail", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1500):  # one level at a time: os.makedirs itself would recurse too deep
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    os.chmod(tmp_path / "jail" / "d", 0o000)
    assert sandbox.remove_tree(tmp_path / "jail") is None and not (tmp_path / "jail").exists()


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
result["uid"] = os.getuid()
for name, path in (("sysctl", "/proc/sys/kernel/core_pattern"), ("sysrq", "/proc/sysrq-trigger")):
    try:
        open(path, "a").close()
        result["write_" + name] = True
    except OSError:
        result["write_" + name] = False
result["shadow"] = os.path.exists("/etc/shadow")
print(json.dumps(result))
'''
    proc = _inside(spec, code)
    assert proc.returncode == 0, proc.stderr
    import json

    seen = json.loads(proc.stdout)
    assert seen["hidden"] is False and seen["clone"] is True
    assert {k: v for k, v in seen.items() if k.startswith("write_")} == {
        "write_clone": False, "write_interpreter": False, "write_root": False, "write_out": True, "write_tmp": True,
        "write_home": True, "write_sysctl": False, "write_sysrq": False}
    assert seen["shadow"] is False  # /etc from an allow-list
    assert seen["uid"] != 0 or os.geteuid() != 0  # a root runner's code runs as nobody (red team: host root)
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
def test_without_network_only_its_own_loopback_is_there(tmp_path):
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    threading.Thread(target=lambda: server.accept(), daemon=True).start()
    code = (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {server.getsockname()[1]}), timeout=3)\n"
            "    print('reached')\nexcept OSError as exc:\n    print('refused', exc)")
    assert _inside(_spec(tmp_path), code).stdout.startswith("reached")  # shared: the runner's loopback
    assert _inside(_spec(tmp_path / "no-net", network=False), code).stdout.startswith("refused")
    server.close()


@needs_bwrap
def test_the_sandbox_has_a_session_keyring_of_its_own(tmp_path):
    """A key the runner holds is not readable inside, and one added inside is gone afterwards (red team)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    add = libc.syscall(248, b"user", b"perfgate-runner-key", b"SECRET", 6, -3)  # add_key to @s
    if add < 0:
        pytest.skip("no keyctl here")
    code = ("import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
            "print(libc.syscall(250, 10, -3, b'user', b'perfgate-runner-key', 0))")  # KEYCTL_SEARCH in @s
    argv = sandbox.bwrap_argv(_spec(tmp_path), [sys.executable, "-c", code], bwrap=shutil.which("bwrap"))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, preexec_fn=sandbox.new_session_keyring,
                          env=sandbox.sandbox_environment({"PATH": "/usr/bin:/bin"}))
    assert proc.stdout.strip() == "-1", proc.stdout + proc.stderr


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


def test_the_uvm_nodes_are_made_before_the_sandbox_where_the_driver_is_loaded_without_them(
        tmp_path):
    # GPU review #26: nvidia-modprobe makes /dev/nvidia-uvm on CUDA's first use, which it cannot
    # do inside the sandbox (no_new_privs, a /dev of its own): CUDA then found no device
    control, uvm = tmp_path / "nvidiactl", tmp_path / "nvidia-uvm"
    control.write_text("")
    called = tmp_path / "called"
    tool = tmp_path / "fake-nvidia-modprobe"
    tool.write_text(f"#!/bin/sh\necho \"$@\" > {called}\ntouch {uvm}\n")
    tool.chmod(0o755)
    sandbox.gpu_devices((), modprobe=str(tool), control=str(control), uvm=str(uvm))
    assert called.read_text().split() == ["-u", "-c=0"] and uvm.exists()
    called.unlink()
    # there now: not again
    sandbox.gpu_devices((), modprobe=str(tool), control=str(control), uvm=str(uvm))
    assert not called.exists()


@needs_bwrap
def test_the_sandboxed_code_can_make_no_user_namespace_and_holds_no_capability_bound(tmp_path):
    # security review P3: in root mode `unshare -Ur` inside gave uid 0 with every capability in a
    # new user namespace, and the bounding set stayed nearly full
    proc = _inside(_spec(tmp_path / "a"), "import ctypes, os\n"
                   "libc = ctypes.CDLL(None, use_errno=True)\n"
                   "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"
                   "print('clone-thread', __import__('threading').Thread(target=lambda: None)"
                   ".start() is None)\n"
                   "print(open('/proc/self/status').read())")
    assert "unshare -1 1" in proc.stdout, proc.stdout + proc.stderr  # EPERM
    assert "clone-thread True" in proc.stdout  # threads still start (clone3 falls back to clone)
    status = dict(line.split(":\t", 1) for line in proc.stdout.splitlines() if ":\t" in line)
    if sandbox.drop_to_for() is not None:  # root mode: the bounding set is cleared too
        assert status["CapBnd"].strip() == "0000000000000000"
    assert status["Seccomp"].strip() == "2"
    unshared = _inside(_spec(tmp_path / "b"), "import subprocess\n"
                       "print(subprocess.run(['unshare', '-Ur', 'id'], capture_output=True, "
                       "text=True).returncode)")
    assert unshared.stdout.strip() not in ("", "0"), unshared.stdout + unshared.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="makes a tree as another user: needs root and setpriv")
def test_a_folder_the_code_made_mode_0_is_removed_all_the_same(tmp_path):
    # security review P6: in user mode `rm -rf` as the owner does not descend into a folder it
    # may not read, and what the pull request put there stayed for later jobs
    import tempfile

    root = Path(__file__).resolve().parents[2]
    # a path the other user may pass
    base = Path(tempfile.mkdtemp(prefix="perfgate-p6-", dir="/tmp"))
    base.chmod(0o711)
    os.chown(base, 65534, 65534)  # RUNNER_TEMP: the runner user's, as the sandbox folder is
    tree = base / "sandbox-folder"
    tree.mkdir()
    os.chown(tree, 65534, 65534)
    code = ("import os, sys; from pathlib import Path; sys.path.insert(0, sys.argv[2])\n"
            "from runner.sandbox.bubblewrap import remove_tree\n"
            "tree = Path(sys.argv[1]); (tree / 'locked' / 'inner').mkdir(parents=True)\n"
            "(tree / 'locked' / 'inner' / 'f').write_text('x'); "
            "(tree / 'locked' / 'inner').chmod(0)\n"
            "(tree / 'locked').chmod(0)\n"
            "print(remove_tree(tree), tree.exists())\n")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           sys.executable, "-c", code, str(tree), str(root)],
                          capture_output=True, text=True, timeout=60)
    shutil.rmtree(base, ignore_errors=True)
    assert proc.stdout.split() == ["None", "False"], proc.stdout + proc.stderr


@needs_bwrap
def test_the_sandboxed_code_can_store_no_key_in_the_kernels_keyrings(tmp_path):
    # security review P7: in root mode every sandbox runs as uid 65534 and shares its user
    # keyring: a key one job added was read by the next
    proc = _inside(_spec(tmp_path), "import ctypes\n"
                   "libc = ctypes.CDLL(None, use_errno=True)\n"
                   "key = libc.syscall(248 if __import__('os').uname().machine == 'x86_64' "
                   "else 217, b'user', b'x', "
                   "b'secret', 6, -4)\n"  # add_key(..., KEY_SPEC_USER_KEYRING)
                   "print(key, ctypes.get_errno())")
    assert proc.stdout.split() == ["-1", "1"], proc.stdout + proc.stderr  # EPERM

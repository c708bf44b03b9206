"""The Kubernetes runner pod keeps perfgate's sandbox (security review 2026-12-06, N1/F1: the
documented ARC deployment told operators to set ``sandbox: none``, and the PR's code then took
upload-artifact's runtime token, the job's token and the runner's credentials).

Checked here, with no cluster: ``deploy/kubernetes/runners/values.yaml`` as the chart gets it (the
container's securityContext field by field, its namespace, its image), the shipped seccomp profile
read rule by rule (it lets bubblewrap work and still refuses what RuntimeDefault and perfgate's own
filter refuse), and real bubblewrap with the Action's own arguments
(``runner.sandbox.bubblewrap.bwrap_argv``)
run as the pod runs it (``tests/deploy/runner_pod.py``: uid 1001, ``no_new_privs``, no
capabilities, the profile compiled to BPF). The whole emulated job under the same conditions is
``tests/action/test_sandbox_routes.py``'s. Not checked: a kubelet and runtime applying these fields
(the runtime's masked ``/proc``, AppArmor, the pod's user namespace), the GPU in such a pod.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from runner.sandbox import bubblewrap as sandbox, seccomp
from tests.deploy.runner_pod import KUBELET_SECCOMP, RUNNERS, SHIPPED_PROFILES, runner_pod
from tests.deploy.seccomp_bpf import HEADER, syscall_numbers

yaml = pytest.importorskip("yaml")
kv = pytest.importorskip("kubernetes_validate.utils")

PROFILE = RUNNERS / "seccomp" / "perfgate-runner.json"
#: What bubblewrap 0.8 calls that RuntimeDefault refuses a container without CAP_SYS_ADMIN: its
#: namespaces (clone with namespace flags; unshare for --disable-userns's check), its mounts and
#: the new root, the sandbox's host name.
BWRAP_NEEDS = ("clone", "unshare", "mount", "umount2", "pivot_root", "sethostname")
#: What the pod's profile must still refuse: perfgate's own filter's calls (the keyrings; clone3
#: with ENOSYS, so that the C library falls back to clone, whose flags a filter can read) and the
#: kernel's big doors RuntimeDefault closes to a container without capabilities.
STILL_REFUSED = ("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "kexec_load",
                 "kexec_file_load", "init_module", "finit_module", "delete_module",
                 "open_by_handle_at", "setns", "fsopen", "fsmount", "fspick", "move_mount",
                 "open_tree", "mount_setattr", "userfaultfd", "io_uring_setup", "io_uring_enter",
                 "reboot", "swapon", "acct", "iopl", "ioperm", "syslog", "settimeofday",
                 "clock_settime", "quotactl", "lookup_dcookie", "pidfd_getfd", "kcmp",
                 "process_madvise", "chroot", "setdomainname")


def _values() -> dict:
    return yaml.safe_load((RUNNERS / "values.yaml").read_text())


def _container(values: dict) -> dict:
    (container,) = values["template"]["spec"]["containers"]
    return container


def _allowed(profile: dict) -> dict[str, list[dict]]:
    """Each system call the profile names, with its rules."""
    out: dict[str, list[dict]] = {}
    for rule in profile["syscalls"]:
        for name in rule["names"]:
            out.setdefault(name, []).append(rule)
    return out


def test_the_runner_pod_is_configured_for_bubblewrap_and_no_more():
    values = _values()
    spec = values["template"]["spec"]
    sc = _container(values)["securityContext"]
    # what bubblewrap needs
    local = "perfgate/perfgate-runner.json"
    assert sc["seccompProfile"] == {"type": "Localhost", "localhostProfile": local}
    assert SHIPPED_PROFILES[local] == PROFILE and PROFILE.is_file()
    assert sc["procMount"] == "Unmasked" and spec["hostUsers"] is False  # the API wants both
    assert sc["appArmorProfile"] == {"type": "Unconfined"}
    # and no more: not privileged, nothing added, no escalation, not root, no API token
    assert sc.get("privileged") is False and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    pod_sc = spec["securityContext"]
    assert pod_sc["runAsNonRoot"] is True and pod_sc["runAsUser"] == 1001
    assert spec["automountServiceAccountToken"] is False
    assert not {"hostPID", "hostIPC", "hostNetwork", "volumes"} & set(spec) - {"volumes"}
    assert all("hostPath" not in v for v in spec["volumes"])
    pod = runner_pod(values)  # the emulation refuses what it cannot stand for
    assert (pod.uid, pod.gid, pod.no_new_privs, pod.capabilities_dropped) == (1001, 1001, True,
                                                                              True)
    for bad in ({"privileged": True}, {"allowPrivilegeEscalation": True},
                {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}},
                {"seccompProfile": {"type": "Unconfined"}}):
        broken = json.loads(json.dumps(values))
        _container(broken)["securityContext"].update(bad)
        with pytest.raises(ValueError):
            runner_pod(broken)


def test_the_deployment_keeps_the_sandbox_and_says_how():
    text = (RUNNERS / "values.yaml").read_text()
    header = text.split("githubConfigUrl")[0]
    assert "Never give the action\n# `sandbox: none` here" in header  # the old advice is gone
    assert "Either give the perfgate action `sandbox: none`" not in text
    for step in ("1. The seccomp profile", "2. The cluster", "3. The namespace", "4. Check it"):
        assert step in header
    assert "kubectl apply -f deploy/kubernetes/runners/seccomp/installer.yaml" in header
    assert "Not tested:" in header  # honest about what no cluster here can show
    (namespace,) = [d for d in yaml.safe_load_all((RUNNERS / "namespace.yaml").read_text()) if d]
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"  # baseline refuses Unmasked
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    assert "procMount: Unmasked" in (RUNNERS / "namespace.yaml").read_text()  # and says why
    dockerfile = (RUNNERS / "Dockerfile").read_text()
    assert "bubblewrap" in dockerfile and '! test -u "$(command -v bwrap)"' in dockerfile
    readme = (RUNNERS.parents[2] / "README.md").read_text()
    kubernetes = readme.split("### GPU runners at scale")[1].split("### GitHub Enterprise")[0]
    assert "perfgate-runner.json" in kubernetes and "procMount: Unmasked" in kubernetes
    assert "or set `sandbox: none`" not in readme


@pytest.mark.parametrize("version", ("1.30.0", kv.latest_version()))
def test_the_profile_installer_is_valid_and_puts_the_profile_where_the_pod_looks(version):
    installer = (RUNNERS / "seccomp" / "installer.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(installer) if d]
    for doc in docs:
        kv.validate(doc, version, strict=True)
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    host = {v["name"]: v for v in pod["volumes"]}["host-seccomp"]["hostPath"]["path"]
    (install,) = pod["initContainers"]
    mount = {m["name"]: m["mountPath"] for m in install["volumeMounts"]}["host-seccomp"]
    written = install["command"][-1].split()[-1]  # the last word of the script: mv's target
    local = _container(_values())["securityContext"]["seccompProfile"]["localhostProfile"]
    assert host == KUBELET_SECCOMP and written == f"{mount}/{local}"
    profile = {v["name"]: v for v in pod["volumes"]}["profile"]["configMap"]["name"]
    assert f"create configmap {profile} \\\n#     --from-file=deploy/kubernetes/runners/seccomp/" \
        f"{PROFILE.name}" in installer
    assert pod["nodeSelector"] == _values()["template"]["spec"]["nodeSelector"]  # every GPU node


def test_the_profile_lets_bubblewrap_work_and_refuses_the_rest():
    profile = json.loads(PROFILE.read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO"
    assert set(profile["architectures"]) == {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}
    rules = _allowed(profile)
    for name in BWRAP_NEEDS:
        assert [r["action"] for r in rules[name]] == ["SCMP_ACT_ALLOW"], name
        assert not rules[name][0].get("args"), name
    assert rules["clone3"] == [{"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]
    for name in STILL_REFUSED:
        assert name not in rules, f"{name} is allowed"
    (vsock,) = rules["socket"]  # no AF_VSOCK (to the host's hypervisor), as RuntimeDefault
    assert vsock["args"] == [{"index": 0, "value": 40, "op": "SCMP_CMP_NE"}]
    # what perfgate's own filter refuses inside the sandbox is refused to the whole pod too, but
    # for user namespaces, which bubblewrap itself needs: the test below shows them refused inside
    numbers = syscall_numbers() if HEADER.exists() else {}
    inner = seccomp._SYSCALLS["x86_64"][1]
    if numbers:
        assert all(numbers[name] == nr for name, nr in inner.items())
    assert {"add_key", "request_key", "keyctl"} == set(inner) - {"unshare", "clone", "clone3"}


needs_the_pod = pytest.mark.skipif(
    shutil.which("bwrap") is None or os.geteuid() != 0 or not HEADER.exists()
    or os.uname().machine != "x86_64",
    reason="runs bubblewrap as the pod's uid under the compiled profile: bwrap, root, x86_64")


def _pod_folder() -> Path:
    """A folder the pod's uid reaches (pytest's tmp_path lies under a root-only folder)."""
    folder = Path(tempfile.mkdtemp(prefix="perfgate-pod-", dir="/tmp"))
    folder.chmod(0o711)
    return folder


def _run_in_pod(folder: Path, profile: dict | None, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` with the Action's sandbox (user mode, as uid 1001 has it) inside the pod."""
    pod = runner_pod(_values())
    if profile is not None:
        pod = type(pod)(**{**pod.__dict__, "profile": profile})
    jail = sandbox.make_scratch(folder / "jail")
    out = sandbox.make_writable(jail / "out")
    read_only = (*sandbox.interpreter_paths(), *sandbox.perfgate_source_paths())
    spec = sandbox.SandboxSpec(read_only=read_only, writable=(str(out),), scratch=str(jail),
                               chdir="/", drop_to=None, seccomp=seccomp.write_userns_filter(jail))
    subprocess.run(["chown", "-R", f"{pod.uid}:{pod.gid}", str(jail)], check=True, timeout=60)
    argv = sandbox.bwrap_argv(spec, [sys.executable, "-c", code], bwrap=shutil.which("bwrap"))
    env = sandbox.sandbox_environment({"PATH": "/usr/bin:/bin"})
    prefix = pod.prefix(folder, sandbox.interpreter_paths())
    return subprocess.run(prefix + argv, capture_output=True, text=True, timeout=120, env=env)


INSIDE = r'''
import ctypes, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
seen = {"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
lines = open("/proc/self/status").read().splitlines()
status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
for key in ("NoNewPrivs", "CapEff", "CapBnd", "Seccomp", "Seccomp_filters"):
    seen[key] = status[key].strip()
seen["unshare_user"] = [libc.unshare(0x10000000), ctypes.get_errno()]
seen["add_key"] = [libc.syscall(248, b"user", b"k", b"secret", 6, -4), ctypes.get_errno()]
seen["unshare_cmd"] = subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode
try:
    open("/evil", "w").write("x")
    seen["write_root"] = True
except OSError:
    seen["write_root"] = False
print(json.dumps(seen))
'''


@needs_the_pod
def test_bubblewrap_runs_in_the_pod_and_the_code_inside_stays_confined():
    folder = _pod_folder()
    try:
        proc = _run_in_pod(folder, None, INSIDE)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["uid"] == 1001 and max(seen["pids"]) < 10  # its own PID namespace
    assert seen["NoNewPrivs"] == "1" and seen["CapEff"] == "0000000000000000"
    assert seen["CapBnd"] == "0000000000000000"
    assert seen["Seccomp"] == "2" and seen["Seccomp_filters"] == "2"  # the pod's, then perfgate's
    assert seen["unshare_user"] == [-1, 1]  # EPERM: no user namespace of its own (review P3)
    assert seen["add_key"] == [-1, 1]  # no keyring (P7)
    assert seen["unshare_cmd"] != 0
    assert seen["write_root"] is False


@needs_the_pod
def test_under_runtime_default_bubblewrap_cannot_start_which_is_why_the_profile_adds_what_it_adds():
    """The control: the same pod with RuntimeDefault's rules (the profile without bubblewrap's six
    system calls, clone allowed only without namespace flags as RuntimeDefault does) — bubblewrap
    stops before running anything, so the test above would fail if the profile did not let it."""
    profile = json.loads(PROFILE.read_text())
    for rule in profile["syscalls"]:
        rule["names"] = [n for n in rule["names"] if n not in BWRAP_NEEDS]
    profile["syscalls"] = [r for r in profile["syscalls"] if r["names"]]
    profile["syscalls"].append({"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                                "args": [{"index": 0, "value": 0x7E020000, "valueTwo": 0,
                                          "op": "SCMP_CMP_MASKED_EQ"}]})
    folders = [_pod_folder() for _ in range(2 + len(BWRAP_NEEDS))]
    try:
        shipped = _run_in_pod(folders[0], None, "print('ran')")
        assert shipped.stdout == "ran\n", shipped.stderr  # the profile as shipped
        refused = _run_in_pod(folders[1], profile, "print('ran')")
        alone = {}
        for missing, folder in zip(BWRAP_NEEDS, folders[2:]):  # each one alone stops it
            one = json.loads(PROFILE.read_text())
            for rule in one["syscalls"]:
                rule["names"] = [n for n in rule["names"] if n != missing]
            alone[missing] = _run_in_pod(folder, one, "print('ran')")
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    assert refused.returncode != 0 and "ran" not in refused.stdout
    assert "bwrap" in refused.stderr, refused.stderr
    for missing, proc in alone.items():
        assert proc.returncode != 0 and "ran" not in proc.stdout, missing
        denied = "bwrap" in proc.stderr and "Operation not permitted" in proc.stderr
        assert denied or missing == "clone", (missing, proc.stderr)

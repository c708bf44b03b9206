"""The Kubernetes runner pod of ``deploy/kubernetes/runners/values.yaml`` as a process on this
machine: what its securityContext does to the runner's processes, read from the values and done
with the same kernel mechanisms, so that a test can run the Action (and its bubblewrap) as the
pod runs it.

From the values: the pod's ``runAsUser``/``runAsGroup``; ``allowPrivilegeEscalation: false``
(``no_new_privs``); ``capabilities.drop: [ALL]`` (an empty bounding set, nothing inherited); the
container's ``Localhost`` seccomp profile (the shipped JSON, compiled by :mod:`seccomp_bpf`).
Not reproduced (no kubelet or container runtime here; the test says so): the runtime's masked
``/proc`` (which ``procMount: Unmasked`` lifts), AppArmor, the pod's user namespace, cgroups.

One harness-only step: this machine's interpreter lives under ``/root`` (mode 0700), where the
pod's uid could not reach it; the pod's image has its Python where that uid reads it. So, in a
mount namespace of the prefix's own, ``/root`` is shown through a traversable folder holding only
the entries the interpreter needs. Nothing of the machine changes.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.deploy.seccomp_bpf import LOADER, compile_profile

ROOT = Path(__file__).resolve().parents[2]
RUNNERS = ROOT / "deploy" / "kubernetes" / "runners"
#: Where the kubelet looks for ``localhostProfile`` paths on a node, and where this repository
#: keeps the files the installer puts there.
KUBELET_SECCOMP = "/var/lib/kubelet/seccomp"
SHIPPED_PROFILES = {"perfgate/perfgate-runner.json": RUNNERS / "seccomp" / "perfgate-runner.json"}

_SCRIPT = r'''
set -e
view="$1"; shift
entries="$1"; shift
if [ -n "$entries" ]; then
    mount -t tmpfs -o mode=0711 perfgate-pod-root "$view"
    for entry in $entries; do
        mkdir "$view/$entry"
        mount --bind "/root/$entry" "$view/$entry"
    done
    mount --rbind "$view" /root
fi
uid="$POD_UID" gid="$POD_GID" python="$POD_PYTHON" loader="$POD_LOADER" bpf="$POD_BPF"
unset POD_UID POD_GID POD_PYTHON POD_LOADER POD_BPF
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all \
    --bounding-set=-all --no-new-privs -- "$python" -c "$loader" "$bpf" "$@"
'''


@dataclass(frozen=True)
class RunnerPod:
    """The runner container's conditions as its securityContext sets them."""

    uid: int
    gid: int
    no_new_privs: bool
    capabilities_dropped: bool
    profile: dict

    def prefix(self, folder: Path, interpreter_paths: tuple[str, ...] = ()) -> list[str]:
        """A command prefix that runs what follows it as this pod's container would: writes the
        compiled profile into ``folder`` (which must exist, traversable by the pod's uid).
        ``interpreter_paths``: the paths under ``/root`` the commands need (see the module)."""
        bpf = folder / "pod-seccomp.bpf"
        bpf.write_bytes(compile_profile(self.profile))
        bpf.chmod(0o644)
        view = folder / "pod-root-view"
        view.mkdir(exist_ok=True)
        entries = sorted({Path(p).relative_to("/root").parts[0] for p in interpreter_paths
                          if p.startswith("/root/") and p != "/root/"})
        return ["env", f"POD_UID={self.uid}", f"POD_GID={self.gid}", f"POD_PYTHON={sys.executable}",
                f"POD_LOADER={LOADER}", f"POD_BPF={bpf}",
                "unshare", "--mount", "--propagation", "private", "--",
                "/bin/sh", "-c", _SCRIPT, "runner-pod", str(view), " ".join(entries)]


def runner_pod(values: dict) -> RunnerPod:
    """The runner container of the chart ``values`` (the one named ``runner``).

    Raises:
        ValueError: a container this emulation cannot stand for: privileged, capabilities added,
            privilege escalation allowed, a seccomp profile that is not one of the shipped files.
    """
    spec = values["template"]["spec"]
    (container,) = [c for c in spec["containers"] if c["name"] == "runner"]
    pod_sc, sc = spec.get("securityContext", {}), container.get("securityContext", {})
    if sc.get("privileged") or sc.get("capabilities", {}).get("add"):
        raise ValueError("a privileged container or added capabilities: not a pod this emulates")
    if sc.get("allowPrivilegeEscalation") is not False:
        raise ValueError("allowPrivilegeEscalation is not false: no no_new_privs in the pod")
    seccomp = sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}
    local = seccomp.get("localhostProfile")
    if seccomp.get("type") != "Localhost" or local not in SHIPPED_PROFILES:
        raise ValueError(f"seccomp profile {seccomp}: not one of the shipped Localhost profiles")
    profile = json.loads(SHIPPED_PROFILES[seccomp["localhostProfile"]].read_text())
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup", uid))
    return RunnerPod(uid=int(uid), gid=int(gid), no_new_privs=True,
                     capabilities_dropped=sc.get("capabilities", {}).get("drop") == ["ALL"],
                     profile=profile)

"""A container runtime's seccomp profile (the OCI JSON a Kubernetes ``Localhost`` profile is), made
into the classic-BPF program the kernel runs, and a process started under it — so that a test can
put bubblewrap where the runner pod puts it: under the pod's profile, as the pod's user, with
``no_new_privs`` and no capabilities (``allowPrivilegeEscalation: false``, ``drop: [ALL]``).

What runc/containerd do with libseccomp, reduced to what ``perfgate-runner.json`` uses: x86_64
(system call numbers from the kernel headers, ``asm/unistd_64.h``), the ``ALLOW`` and ``ERRNO``
actions, and the ``EQ``/``NE``/``MASKED_EQ`` comparisons of a 64-bit argument (``MASKED_EQ``: the
runtimes' default profiles restrict ``clone``'s flags with it). A profile that uses more is a test
error (:class:`ValueError`), never a silently different program. x32 system calls and other
architectures get the profile's default action, as a profile that lists only
``SCMP_ARCH_X86_64`` gets from libseccomp (its "bad architecture" action aside).
"""

from __future__ import annotations

import re
from pathlib import Path

from runner.sandbox.seccomp import assemble

HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
AUDIT_ARCH_X86_64 = 0xC000003E
_LD, _JEQ, _JGE, _RET, _AND = 0x20, 0x15, 0x35, 0x06, 0x54
_NR, _ARCH = 0, 4
ALLOW = 0x7FFF0000
ERRNO = 0x00050000

#: Loads the program in ``argv[1]`` into this process (``no_new_privs`` first, as an unprivileged
#: process must) and executes ``argv[2:]`` under it.
LOADER = r'''
import ctypes, os, sys
program = open(sys.argv[1], "rb").read()
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.exit("no_new_privs: errno %d" % ctypes.get_errno())
prog = Prog(len(program) // 8, program)
if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    sys.exit("seccomp: errno %d" % ctypes.get_errno())
os.execvp(sys.argv[2], sys.argv[2:])
'''


def syscall_numbers(header: Path = HEADER) -> dict[str, int]:
    """x86_64's system call numbers by name, from the kernel's UAPI header."""
    found = re.findall(r"#define __NR_(\w+) (\d+)", header.read_text())
    return {name: int(nr) for name, nr in found}


def _action(rule_or_profile: dict, key: str = "action") -> int:
    action = rule_or_profile[key]
    if action == "SCMP_ACT_ALLOW":
        return ALLOW
    if action == "SCMP_ACT_ERRNO":
        errno = rule_or_profile.get("errnoRet" if key == "action" else "defaultErrnoRet", 1)
        return ERRNO | errno
    raise ValueError(f"action {action} is not one this compiler knows")


def _condition(arg: dict, fail: str, label: str) -> list:
    """Instructions that fall through when ``arg`` holds and jump to ``fail`` when not."""
    index, value, op = arg["index"], arg["value"], arg["op"]
    low, high = 16 + 8 * index, 20 + 8 * index
    if op == "SCMP_CMP_EQ":
        return [(_LD, 0, 0, high), (_JEQ, 0, fail, value >> 32),
                (_LD, 0, 0, low), (_JEQ, 0, fail, value & 0xFFFFFFFF)]
    if op == "SCMP_CMP_NE":
        return [(_LD, 0, 0, high), (_JEQ, 0, label, value >> 32),
                (_LD, 0, 0, low), (_JEQ, fail, 0, value & 0xFFFFFFFF), label]
    if op == "SCMP_CMP_MASKED_EQ":  # OCI: (argument & value) == valueTwo
        mask, want = value, arg.get("valueTwo", 0)
        return [(_LD, 0, 0, high), (_AND, 0, 0, mask >> 32), (_JEQ, 0, fail, want >> 32),
                (_LD, 0, 0, low), (_AND, 0, 0, mask & 0xFFFFFFFF),
                (_JEQ, 0, fail, want & 0xFFFFFFFF)]
    raise ValueError(f"comparison {op} is not one this compiler knows")


def compile_profile(profile: dict, numbers: dict[str, int] | None = None) -> bytes:
    """The classic-BPF program of ``profile`` for x86_64 (what ``seccomp_export_bpf`` writes).

    Raises:
        ValueError: an action, comparison or architecture this compiler does not know, or one
            system call both allowed unconditionally and under conditions.
    """
    numbers = numbers or syscall_numbers()
    if "SCMP_ARCH_X86_64" not in profile.get("architectures", ["SCMP_ARCH_X86_64"]):
        raise ValueError("the profile does not name SCMP_ARCH_X86_64")
    default = _action(profile, "defaultAction")
    rules: dict[int, list[dict]] = {}
    for rule in profile["syscalls"]:
        for name in rule["names"]:
            if name in numbers:
                rules.setdefault(numbers[name], []).append(rule)
    body: list = [(_LD, 0, 0, _ARCH), (_JEQ, 1, 0, AUDIT_ARCH_X86_64), (_RET, 0, 0, default),
                  (_LD, 0, 0, _NR), (_JGE, 0, 1, 0x40000000), (_RET, 0, 0, default)]
    blocks: list = []
    for nr, nr_rules in sorted(rules.items()):
        if len(nr_rules) == 1 and not nr_rules[0].get("args"):
            body += [(_JEQ, 0, 1, nr), (_RET, 0, 0, _action(nr_rules[0]))]
            continue
        if any(not r.get("args") for r in nr_rules):
            raise ValueError(f"system call {nr} is both unconditional and conditional")
        body += [(_JEQ, 0, 1, nr), ("JA", f"NR{nr}")]
        blocks.append(f"NR{nr}")
        for i, rule in enumerate(nr_rules):
            fail = f"NR{nr}_{i}_FAIL"
            for j, arg in enumerate(rule["args"]):
                blocks += _condition(arg, fail, f"NR{nr}_{i}_{j}_OK")
            blocks += [(_RET, 0, 0, _action(rule)), fail, (_LD, 0, 0, _NR)]
        blocks.append((_RET, 0, 0, default))
    return assemble([*body, (_RET, 0, 0, default), *blocks])

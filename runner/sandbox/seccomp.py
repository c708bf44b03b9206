"""The sandbox's seccomp program: the system calls a pull request's code may not make, as the
classic-BPF program bubblewrap's ``--seccomp FD`` loads
(:attr:`runner.sandbox.bubblewrap.SandboxSpec.seccomp`). A module of its own (moved out of
runner/sandbox/bubblewrap.py): the program's encoding and its reasons are one concept, the mounts
and users of the sandbox another.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

#: seccomp_data's fields (linux/seccomp.h): the system call's number, its architecture, and the
#: low 32 bits of its first argument (little-endian).
_NR, _ARCH, _ARG0 = 0, 4, 16
#: The architectures the filter knows: ``AUDIT_ARCH_*`` and the system calls it looks at.
_SYSCALLS = {
    "x86_64": (0xC000003E, {"unshare": 272, "clone": 56, "clone3": 435, "add_key": 248,
                            "request_key": 249, "keyctl": 250}),
    "aarch64": (0xC00000B7, {"unshare": 97, "clone": 220, "clone3": 435, "add_key": 217,
                             "request_key": 218, "keyctl": 219}),
}
CLONE_NEWUSER = 0x10000000


def userns_filter(machine: str | None = None) -> bytes | None:
    """A classic-BPF seccomp program (what ``seccomp_export_bpf`` writes, bubblewrap's
    ``--seccomp FD`` loads) that refuses the sandboxed code two kinds of per-user kernel state:

    - a user namespace of its own: ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` get EPERM,
      ``clone3`` (whose flags a filter cannot read) ENOSYS, so the C library falls back to
      ``clone``. In root mode the code, uid 65534 with no capabilities, could ``unshare -Ur`` into
      a namespace where it is uid 0 with every capability — the door to most recent kernel
      privilege escalations (security review 2026-12-06, P3); user mode's ``--disable-userns``
      needs a user namespace of bubblewrap's own, which root mode does not make;
    - the kernel's keyrings (``add_key``, ``request_key``, ``keyctl``: EPERM): every root-mode
      sandbox of the machine runs as uid 65534 and shares its user keyring, so a key one job
      added was read by the next (P7).

    x32 and other-architecture system calls get ENOSYS; everything else is allowed. None for an
    architecture it does not know."""
    machine = machine or os.uname().machine
    if machine not in _SYSCALLS:
        return None
    arch, nr = _SYSCALLS[machine]
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050001, 0x00050026
    refused = [nr["add_key"], nr["request_key"], nr["keyctl"]]
    # labels resolved to the offsets cBPF jumps count (from the next instruction)
    body: list[tuple] = [
        (ld, 0, 0, _ARCH), (jeq, 0, "ENOSYS", arch),
        (ld, 0, 0, _NR), (jge, "ENOSYS", 0, 0x40000000),
        (jeq, "ENOSYS", 0, nr["clone3"]),
        *[(jeq, "EPERM", 0, number) for number in refused],
        (jeq, "FLAGS", 0, nr["unshare"]), (jeq, "FLAGS", "ALLOW", nr["clone"]),
        "FLAGS", (ld, 0, 0, _ARG0), (jset, "EPERM", "ALLOW", CLONE_NEWUSER),
        "ALLOW", (ret, 0, 0, allow), "EPERM", (ret, 0, 0, eperm), "ENOSYS", (ret, 0, 0, enosys),
    ]
    return assemble(body)


def assemble(body: list) -> bytes:
    """A classic-BPF program from ``body``: instructions ``(code, jt, jf, k)`` whose ``jt``/``jf``
    may name a label (a string item of ``body``, marking the next instruction), and
    ``("JA", label)``, the unconditional jump that reaches further than a conditional one.

    Raises:
        ValueError: a conditional jump further than the 255 instructions cBPF can count.
    """
    labels, program = {}, []
    for item in body:
        if isinstance(item, str):
            labels[item] = len(program)
        else:
            program.append(item)

    def offset(target, at: int) -> int:
        jump = labels[target] - at - 1 if isinstance(target, str) else target
        if not 0 <= jump <= 255:
            raise ValueError(f"a conditional jump of {jump} instructions")
        return jump

    return b"".join(
        struct.pack("<HBBI", 0x05, 0, 0, labels[item[1]] - at - 1) if item[0] == "JA"  # BPF_JA
        else struct.pack("<HBBI", item[0], offset(item[1], at), offset(item[2], at), item[3])
        for at, item in enumerate(program))


def write_userns_filter(scratch: str | Path) -> str | None:
    """Write :func:`userns_filter` beside the sandbox's scratch folders (not inside what the
    sandbox sees) and return its path for :attr:`SandboxSpec.seccomp`; None where there is none."""
    program = userns_filter()
    if program is None:
        return None
    path = Path(scratch) / "no-userns.bpf"
    path.write_bytes(program)
    return str(path)

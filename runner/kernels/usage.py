"""What the CUDA binary tools print about a cubin, read (pure).

``cuobjdump --dump-resource-usage`` prints per function
``REG:255 STACK:5336 SHARED:1024 LOCAL:0 CONSTANT[0]:608 ...``: registers per thread, the stack
frame per thread in bytes (where ptxas spills registers and keeps local arrays), static shared
memory per block, and local memory per thread, bytes. ``nvdisasm`` prints the SASS, one
instruction a line (``/*0010*/  IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;``); ``STL``/``LDL``
are stores to and loads from local memory: spill traffic (and local arrays) in instructions.

Triton's own metadata holds ``shared`` (the dynamic shared memory a launch asks for); the
registers and spills it reports (``n_regs``, ``n_spills``) are read from the loaded module by the
driver, so without a GPU they are absent: the cubin is the source, read by NVIDIA's tools.
"""

from __future__ import annotations

import hashlib
import re

_FUNCTION = re.compile(r"^\s*Function\s+(\S+):\s*$")
_FIELD = re.compile(r"([A-Z]+)(?:\[\d+\])?:(\d+)")
_INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def resource_usage(text: str, function: str | None = None) -> dict:
    """``{registers, stack, shared_static, local}`` of ``function`` (the first function when
    None) in ``cuobjdump --dump-resource-usage`` output, bytes per thread / per block.

    Raises:
        ValueError: no such function in ``text``.
    """
    current = None
    for line in text.splitlines():
        m = _FUNCTION.match(line)
        if m:
            current = m.group(1)
            continue
        if current is not None and (function is None or current == function) and "REG:" in line:
            fields = {k: int(v) for k, v in _FIELD.findall(line)}
            return {"registers": fields.get("REG", 0), "stack": fields.get("STACK", 0),
                    "shared_static": fields.get("SHARED", 0), "local": fields.get("LOCAL", 0)}
    raise ValueError(f"no resource usage for {function or 'any function'} in cuobjdump's output")


def sass_counts(text: str) -> dict:
    """``{instructions, local_stores, local_loads, sass_sha256}`` in ``nvdisasm`` output
    (``NOP`` padding not counted); ``sass_sha256``: a SHA-256 of the instructions as written
    (addresses included): the machine code, which two cubins can share while their line tables
    (the source's columns, which Triton records) differ."""
    found = [m for m in map(_INSTRUCTION.search, text.splitlines()) if m]
    ops = [m.group(2) for m in found if m.group(2) != "NOP"]
    code = "\n".join(m.string[m.start():].split(";")[0].strip() for m in found)
    return {"instructions": len(ops),
            "local_stores": sum(op.split(".")[0] == "STL" for op in ops),
            "local_loads": sum(op.split(".")[0] == "LDL" for op in ops),
            "sass_sha256": hashlib.sha256(code.encode()).hexdigest()}

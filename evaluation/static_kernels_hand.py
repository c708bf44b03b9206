"""The hand check of issue 49: compile the Triton kernels a real PR changed, base and head, for
sm_80 and sm_90 with no GPU, and read their resources from the compiler's own tools.

Written without any perfgate code, so that ``perfgate kernels`` can be judged against it, but
one text function: a kernel whose package does not import here (``load = "source"``) is loaded
from its file reduced to its Triton code by the product's own reduction
(``runner.kernels.find.triton_only``, moved there from this file with no change of behaviour),
so that the product and the hand check reduce a file alike.

For each case of ``evaluation/static_kernels/cases.toml`` and each side (base, head):

1. ``git archive <sha> <paths>`` of the case's repository (a clone of the public repository made
   from the ``fetch`` tool's mirror, ``--mirrors DIR/<name>``) is extracted into one fixed folder,
   the same for both sides: ``-lineinfo`` (Triton's default) writes the source's path into the
   cubin, so two folders would make every cubin differ.
2. A worker process (this file, ``--worker``) imports the kernel's module from there, unwraps
   ``triton.autotune``/``triton.heuristics`` to the ``JITFunction`` and compiles it with Triton's
   own API, ``triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", cc,
   32), options={"num_warps", "num_stages"})`` (triton 3.9: ``triton/compiler/compiler.py``), in
   a fresh ``TRITON_CACHE_DIR`` so that every compile is timed cold.
3. Resources, three ways:
   - ``cuobjdump --dump-resource-usage`` (bundled: ``triton/backends/nvidia/bin/cuobjdump``) on
     the cubin: ``REG``, ``STACK``, ``SHARED`` (static shared memory), ``LOCAL``;
   - ptxas's own ``-v`` log, which Triton prints when ``knobs.nvidia.dump_ptxas_log`` is set
     (``make_cubin`` in ``triton/backends/nvidia/compiler.py``): registers, stack frame, spill
     stores and loads. On a GPU Triton's ``n_regs``/``n_spills`` come from the driver
     (``CompiledKernel._init_handles``), which needs a GPU; ptxas's log is what the driver's
     numbers are made from;
   - the compiled kernel's metadata: ``shared`` (the dynamic shared memory Triton asks for at
     launch, from the TTGIR's ``ttg.shared``; cuobjdump's SHARED is static shared memory, which
     Triton kernels do not declare, so the two are not expected to agree).
4. ``cubin_sha256`` of the cubin and ``sass_sha256`` of ``cuobjdump -sass`` without its header
   (the machine code alone, without the line table: a kernel moved by an edit above it keeps its
   SASS but not its cubin).

Specialisation (``[[cases.kernels]]``): ``types`` names each argument's Triton type (``*bf16``,
``i32``, ``fp32``, ``fp64`` ...); an argument not named takes its annotation's type if it has one
(``x: tl.float32``), else ``ptr_type`` when its name contains ``ptr``, else ``int_type``
(default ``i32``). ``constexprs`` gives every ``tl.constexpr`` argument that has no default (and
may fix a plain argument, as Triton does with ``None``: the string ``"None"``). Unlike a launch,
no ``tt.divisibility`` attributes and no ``== 1`` specialisation are applied. A spec that gives
a launch's whole ``signature`` (with ``aligned``: the arguments Triton marked 16-byte divisible)
is compiled as given: ``evaluation/static_kernels_captured.py``'s launches.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

CASES = Path(__file__).resolve().parent / "static_kernels" / "cases.toml"
#: This repository (its runner.kernels.find.triton_only reduces a `load = "source"` file).
REPO = Path(__file__).resolve().parents[1]
ARCHS = (80, 90)
FIXED_MTIME = 1_000_000_000
RESOURCE = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                         r"(\d+) bytes spill loads")
PTXAS_REGS = re.compile(r"Used (\d+) registers")


def load_cases(path: Path = CASES) -> list[dict]:
    with open(path, "rb") as handle:
        return tomllib.load(handle)["cases"]


# ----------------------------------------------------------------------------------------------
# worker side: runs inside the extracted source tree, one process per case and side


def _tool(name: str) -> str:
    import triton

    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def _jit_function(obj):
    """``triton.autotune``/``triton.heuristics`` wrap the JITFunction in ``.fn``."""
    from triton.runtime.jit import JITFunction

    while not isinstance(obj, JITFunction) and hasattr(obj, "fn"):
        obj = obj.fn
    return obj


def _value(value):
    """TOML has no None and no Triton dtypes: ``"None"`` and ``"tl.bfloat16"`` stand for them."""
    if value == "None":
        return None
    if isinstance(value, str) and value.startswith("tl."):
        import triton.language as tl

        return getattr(tl, value[3:])
    return value


def _scalar_type(value, spec: dict) -> str:
    """The type Triton's launcher gives a Python scalar (``runtime/jit.py``'s ``mangle_type``:
    bool ``u1``, int ``i32``, float ``fp32``); ``float_type = "fp64"`` is Inductor's launch."""
    if isinstance(value, bool):
        return "u1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    return spec.get("float_type", "fp32")


def build_signature(fn, spec: dict) -> tuple[dict, dict]:
    """The ``ASTSource`` signature and constexprs of one kernel from its case's specialisation.

    A value in ``constexprs`` for an argument the kernel does not declare ``tl.constexpr`` (one
    side of a PR that made it constexpr) is passed as a runtime scalar of its launch type, except
    ``None``, which Triton always makes a constant."""
    types, given = spec.get("types", {}), spec.get("constexprs", {})
    signature, constexprs = {}, {}
    for param in fn.params:
        name = param.name
        value = _value(given[name]) if name in given else None
        if name in given and (param.is_constexpr or value is None):
            signature[name], constexprs[name] = "constexpr", value
        elif param.is_constexpr:
            if not param.has_default:
                raise ValueError(f"{fn.__name__}: constexpr {name} has no value in the case")
            signature[name], constexprs[name] = "constexpr", param.default
        elif name in types:
            signature[name] = types[name]
        elif name in given:
            signature[name] = _scalar_type(value, spec)
        elif param.annotation_type:
            signature[name] = param.annotation_type
        elif "ptr" in name.lower():
            signature[name] = spec.get("ptr_type", "*fp32")
        else:
            signature[name] = spec.get("int_type", "i32")
    return signature, constexprs


def resources(cubin: bytes, workdir: str) -> dict:
    path = Path(workdir) / "kernel.cubin"
    path.write_bytes(cubin)
    usage = subprocess.run([_tool("cuobjdump"), "--dump-resource-usage", str(path)],
                           capture_output=True, text=True, check=True).stdout
    regs, stack, shared, local = map(int, RESOURCE.search(usage).groups())
    sass = subprocess.run([_tool("cuobjdump"), "-sass", str(path)],
                          capture_output=True, text=True, check=True).stdout
    code = "\n".join(line for line in sass.splitlines()
                     if line.strip() and not line.lstrip().startswith(("code for", "Fatbin", "arch",
                                                                      "code version", "host",
                                                                      "compile_size", "Function")))
    return {"regs": regs, "stack": stack, "shared_static": shared, "local": local,
            "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
            "sass_sha256": hashlib.sha256(code.encode()).hexdigest()}


def compile_one(fn, spec: dict, cc: int, workdir: str) -> dict:
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if "signature" in spec:  # a launch's own (evaluation/static_kernels_captured.py)
        signature = spec["signature"]
        constexprs = {k: _value(v) for k, v in spec["constexprs"].items()}
    else:
        signature, constexprs = build_signature(fn, spec)
    attrs = {(i,): [["tt.divisibility", 16]] for i in spec.get("aligned", [])}
    options = {"num_warps": spec.get("num_warps", 4), "num_stages": spec.get("num_stages", 3)}
    log = io.StringIO()
    start = time.perf_counter()
    try:
        with knobs.nvidia.scope(), knobs.compilation.scope(), contextlib.redirect_stdout(log):
            knobs.nvidia.dump_ptxas_log = True
            # every compile cold: ptxas's log is only printed when ptxas runs, and a cache hit
            # (a config repeated in a case) would time nothing
            knobs.compilation.always_compile = True
            kernel = triton.compile(ASTSource(fn, signature=signature, constexprs=constexprs,
                                              attrs=attrs),
                                    target=GPUTarget("cuda", cc, 32), options=options)
    except Exception as error:  # noqa: BLE001 - a side that does not compile is a finding
        # Triton's CompilationError opens with the source excerpt and ends with the cause
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        where = lines[0] if lines else ""
        cause = lines[-1] if len(lines) > 1 else ""
        return {"error": f"{type(error).__name__} {where} {cause}"[:400],
                "seconds": round(time.perf_counter() - start, 3)}
    seconds = time.perf_counter() - start
    row = resources(kernel.asm["cubin"], workdir)
    if os.environ.get("HAND49_KEEP"):  # the cubins themselves, for a look with nvdisasm
        keep = Path(os.environ["HAND49_KEEP"])
        keep.mkdir(parents=True, exist_ok=True)
        name = f"{fn.__name__}-sm_{cc}-{row['cubin_sha256'][:12]}.cubin"
        (keep / name).write_bytes(kernel.asm["cubin"])
    text = log.getvalue()
    frame, regs = PTXAS_FRAME.search(text), PTXAS_REGS.search(text)
    row.update({
        "seconds": round(seconds, 3),
        "ptxas_regs": int(regs.group(1)) if regs else None,
        "ptxas_stack": int(frame.group(1)) if frame else None,
        "spill_stores": int(frame.group(2)) if frame else None,
        "spill_loads": int(frame.group(3)) if frame else None,
        "meta_shared": kernel.metadata.shared,
        # names the case gives that this side's kernel does not have (one side of a changed
        # signature), kept visible rather than an error
        "unused_spec": sorted((set(spec.get("types", {})) | set(spec.get("constexprs", {})))
                              - set(fn.arg_names)),
        "num_warps": options["num_warps"], "num_stages": options["num_stages"],
        "constexprs": spec.get("constexprs", {}),
    })
    return row


def _configs(obj, spec: dict) -> list[dict]:
    """One spec per compile: the spec itself, or with ``autotune = true`` one per
    ``triton.autotune`` config of this side (its kwargs, num_warps, num_stages)."""
    if not spec.get("autotune"):
        return [spec]
    out = []
    for i, config in enumerate(getattr(obj, "configs", [])):
        label = ",".join(f"{k}={v}" for k, v in config.kwargs.items())
        out.append(dict(spec, constexprs=dict(spec.get("constexprs", {}), **config.kwargs),
                        num_warps=config.num_warps, num_stages=config.num_stages,
                        config=f"{spec.get('config', 'autotune')} [{i}] {label},"
                               f"w{config.num_warps},s{config.num_stages}"))
    return out


def load_kernel(spec: dict):
    """The kernel object, imported as its package does (``load = "import"``, the default) or,
    where importing the package needs a GPU or dependencies not installed here
    (``load = "source"``), from its own file reduced in place by the product's reduction
    (:func:`runner.kernels.find.triton_only`, the one implementation: ``perfgate kernels`` falls
    back to it where a kernel's package does not import)."""
    import importlib
    import importlib.util

    from runner.kernels.find import triton_only

    if spec.get("load", "import") == "import":
        return getattr(importlib.import_module(spec["module"]), spec["name"])
    path = Path(spec["file"]).resolve()  # the worker runs in the extracted tree's root
    path.write_text(triton_only(path.read_text()))
    os.utime(path, (FIXED_MTIME, FIXED_MTIME))  # sm_80's line table records it (see extract)
    module_spec = importlib.util.spec_from_file_location(spec["module"], path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[spec["module"]] = module
    module_spec.loader.exec_module(module)
    return getattr(module, spec["name"])


def worker(specs: list[dict]) -> list[dict]:

    out = []
    with tempfile.TemporaryDirectory() as workdir:
        for spec in specs:
            row = {"kernel": spec["name"], "config": spec.get("config", "default")}
            try:
                obj = load_kernel(spec)
                fn = _jit_function(obj)
            except Exception as error:  # noqa: BLE001 - a kernel missing on one side is reported
                message = f"import: {type(error).__name__}: {error}"[:400]
                out.extend(dict(row, arch=f"sm_{cc}", error=message)
                           for cc in spec.get("archs", ARCHS))
                continue
            for one in _configs(obj, spec):
                for cc in spec.get("archs", ARCHS):
                    out.append(dict(row, config=one.get("config", "default"), arch=f"sm_{cc}",
                                    **compile_one(fn, one, cc, workdir)))
    return out


def for_side(specs: list[dict], side: str) -> list[dict]:
    """The specs one side compiles: ``sides`` filters, ``{base = .., head = ..}`` picks."""
    out = []
    for spec in specs:
        if side not in spec.get("sides", ("base", "head")):
            continue
        out.append({k: _pick(v, side) for k, v in spec.items()})
    return out


def _pick(value, side: str):
    """``{base = .., head = ..}`` anywhere in a spec (num_stages, one constexpr) is per side."""
    if isinstance(value, dict):
        if set(value) == {"base", "head"}:
            return value[side]
        return {k: _pick(v, side) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------------------------
# driver side


def extract(repo: Path, sha: str, paths: list[str], into: Path) -> None:
    if into.exists():
        shutil.rmtree(into)
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", sha, "--", *paths],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    # ptxas for sm_80 writes each source file's mtime and size into the cubin's line table
    # (cuobjdump -elf, .nv_debug_line_sass); git archive stamps the commit time, so the same file
    # on two sides would give two cubins. One fixed mtime for every file; sm_90's ptxas records 0.
    for path in into.rglob("*"):
        os.utime(path, (FIXED_MTIME, FIXED_MTIME), follow_symlinks=False)


def run_side(case: dict, side: str, repo: Path, scratch: Path) -> list[dict]:
    tree = scratch / case["id"]
    roots = sorted({k.get("module_root", ".") for k in case["kernels"]})
    extract(repo, case[side], case.get("archive", roots), tree)
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="hand-cache-"),
               TRITON_DEFAULT_FP_FUSION="1",
               PYTHONPATH=os.pathsep.join([*(str(tree / r) for r in roots), str(REPO)]))
    specs = json.dumps(for_side(case["kernels"], side))
    done = subprocess.run([sys.executable, __file__, "--worker"], input=specs, cwd=tree, env=env,
                          capture_output=True, text=True, timeout=1800)
    shutil.rmtree(env["TRITON_CACHE_DIR"], ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"{case['id']} {side}: worker failed\n{done.stderr[-2000:]}")
    return [dict(r, case=case["id"], side=side) for r in json.loads(done.stdout.splitlines()[-1])]


def check(cases: list[dict], mirrors: Path, scratch: Path) -> list[dict]:
    rows = []
    for case in cases:
        repo = mirrors / case["clone"]
        for side in ("base", "head"):
            started = time.perf_counter()
            rows.extend(run_side(case, side, repo, scratch))
            print(f"{case['id']} {side}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--mirrors", type=Path, default=Path("/tmp/ev49"),
                        help="folder of clones, one per case's `clone` name")
    parser.add_argument("--case", action="append", help="only these case ids")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "hand49")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(sys.stdin.read()))))
        return 0
    cases = [c for c in load_cases(args.cases) if c.get("kernels")
             and (not args.case or c["id"] in args.case)]
    rows = check(cases, args.mirrors, args.scratch)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from static_kernels_table import markdown

    table = markdown(rows)
    if args.markdown:
        args.markdown.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The specialisations a kernel is compiled with (pure): argument types, ``tl.constexpr`` values,
``num_warps`` and ``num_stages``, and how each was found.

Triton compiles one binary per specialisation, and registers, spills and shared memory are
properties of that binary, so a kernel is compared per specialisation. The sources, best first:

1. ``launch`` — a program's own calls, captured where Triton decides to compile
   (``triton.knobs.runtime.jit_cache_hook`` gets ``signature, constexprs, options, attrs`` of every
   compile and may answer "done" so nothing is built or launched: :mod:`runner.kernels.capture`,
   ``perfgate kernels --capture CMD``, :func:`from_capture`). It needs the program to get as far
   as the launch, which without a GPU only one whose tensors live on the CPU does (a benchmark
   that makes its tensors on ``cuda`` does not; on a GPU runner every launch is captured), so
   the static sources below stand in for the kernels it did not launch;
2. ``autotune config`` — every ``triton.Config`` of an ``@triton.autotune`` written literally
   (each config is a binary the autotuner compiles, so each is reported);
3. ``launch site`` — the literal values of ``kernel[grid](..., BLOCK=128, num_warps=4)`` and the
   dtypes of tensors made in the same function with ``dtype=torch.X``;
4. ``default`` — a parameter's default, else a stated guess (below), Triton's own
   ``num_warps=4, num_stages=3``.

Guesses, named in ``guessed``: a non-constexpr parameter that reaches a ``tl.load``/``tl.store``
address as a term of a sum (:func:`runner.kernels.find.address_params`: ``Q`` in ``tl.load(Q +
offs)``, not ``D`` nor ``stride`` in ``row * stride``), whose name holds ``ptr``, or that starts
with a capital letter and is handed on to a helper (a lone capital only when it is one of Q, V,
O, X, Y, W, A, B: ``D``, ``N``, ``K`` handed on are sizes as often), is a pointer to fp32
(16-byte aligned, as a fresh torch tensor is: Triton's ``tt.divisibility=16``), to i64 where
what it holds is loaded and used as an offset (labels, indices); a
``stride``/``n_cols``/other parameter is an ``i32``; ``eps``, ``scale``, ``alpha`` ... are
``fp32``; a constexpr without a value is, where the kernel uses it as an enum (only compares
it: ``if LOSS_TYPE == 0: ... elif LOSS_TYPE == 1: ...``, :func:`compared_values`), the first
value it is compared with (64 would match no branch, and a variable bound in every branch would
be undefined on both sides); else 64 (a block size), False when named
``HAS_*``/``IS_*``/``USE_*``/``EVEN_*``, ``tl.float32`` when its name holds ``dtype``, 1e-6 for
an ``eps`` and 1.0 for another float's name. A guess changes only the
absolute numbers: base and head are compiled with the same one.
"""

from __future__ import annotations

import ast
import builtins

from .evaluate import evaluate, run_body
from .find import Kernel

#: Triton's defaults for CUDA targets.
NUM_WARPS, NUM_STAGES = 4, 3
#: Specialisations per kernel read from launch sites at most (each is compiled per arch).
MAX_SITES = 4
_FLOATS = ("eps", "scale", "alpha", "beta", "gamma", "temperature", "softcap", "momentum", "lr",
           "weight_decay", "p", "dropout_p", "sm_scale", "softmax_scale", "label_smoothing")
_FLAGS = ("HAS_", "IS_", "USE_", "EVEN_", "ENABLE_", "RETURN_", "DO_", "APPLY_")


_INTS = ("stride", "size", "numel", "len", "count", "num_", "n_", "offset")


def _guess_type(name: str, addresses: dict) -> str:
    lower = name.lower()
    if name in addresses.get("index_pointers", ()):
        return "*i64"  # indices and labels: torch's long
    if "ptr" in lower or name in addresses.get("pointers", ()):
        return "*fp32"
    if any(word in lower for word in _INTS) or lower.startswith("n"):
        return "i32"
    if name[:1].isupper() and (name in addresses.get("opaque", ())
                               or not addresses.get("reads_memory", True)):
        # a lone capital handed on is a size as often as a tensor (M, N, K, D): it is one
        # where it reaches no address; longer capitalised names (Out, DO, Bias) are tensors
        return "*fp32" if len(name) > 1 or name in "QVOXYWAB" else "i32"
    if name.lower() in _FLOATS or name.lower().endswith(("_scale", "_eps")):
        return "fp32"
    return "i32"


def _compared(use: ast.Name, parent: ast.AST | None, env: dict) -> list | None:
    """The values one use of a constexpr is compared with: ``MODE == 1`` / ``1 != MODE`` → [1],
    ``MODE in (1, 2)`` → [1, 2]; None where the use is no such comparison or the other side is no
    value :func:`runner.kernels.evaluate.evaluate` finds (a literal, a module constant)."""
    if not (isinstance(parent, ast.Compare) and len(parent.ops) == 1):
        return None
    op, other = parent.ops[0], (parent.comparators[0] if parent.left is use else parent.left)
    try:
        value = evaluate(other, env)
    except (ValueError, TypeError, ZeroDivisionError, KeyError, IndexError):
        return None
    if isinstance(op, (ast.Eq, ast.NotEq)):
        values = [value]
    elif isinstance(op, (ast.In, ast.NotIn)) and parent.left is use and isinstance(
            value, (list, tuple)):
        values = list(value)
    else:
        return None
    return values if values and all(isinstance(v, (int, float, str)) for v in values) else None


def compared_values(kernel: Kernel) -> dict[str, list]:
    """The ``tl.constexpr`` parameters ``kernel`` uses as an enum, ``{name: [values]}`` in the
    order its source compares them: each one whose every use is ``==``/``!=`` against a value
    (``LOSS_TYPE == 1``; ``mode != _MODE_B`` where the module has ``_MODE_B: tl.constexpr =
    tl.constexpr(1)``), ``in`` a literal tuple, or an argument handed on to a helper (a call of
    a bare name other than a builtin: it may compare it too). One used otherwise
    (``tl.arange(0, BLOCK)``, ``if FLAG:``, arithmetic) is a size or a flag: not listed. Read
    from ``kernel.source`` and ``kernel.uses`` alone."""
    try:
        fn = next(s for s in ast.parse(kernel.source).body if isinstance(s, ast.FunctionDef))
        env: dict = {}
        run_body([st for src in kernel.uses.values() for st in ast.parse(src).body], env)
    except (SyntaxError, StopIteration):
        return {}
    constexprs = {name for name, is_constexpr, _ in kernel.params if is_constexpr}
    parents = {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    uses = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in constexprs
                   and isinstance(n.ctx, ast.Load)), key=lambda n: (n.lineno, n.col_offset))
    found: dict[str, list] = {}
    other: set[str] = set()
    for use in uses:
        parent = parents.get(use)
        values = _compared(use, parent, env)
        if values is not None:
            seen = found.setdefault(use.id, [])
            seen += [v for v in values if v not in seen]
        elif not (isinstance(parent, ast.Call) and use in parent.args
                  and isinstance(parent.func, ast.Name) and not hasattr(builtins, parent.func.id)):
            other.add(use.id)  # not handed on to a helper (tl.arange(0, BLOCK), range(N))
    return {name: v for name, v in found.items() if name not in other}


def _guess_constexpr(name: str, compared: list | None = None):
    """A constexpr's value where nothing gives one: the first of the values the kernel compares
    it with (``compared``, :func:`compared_values`), else by its name (the module's docstring)."""
    if compared:
        return compared[0]
    if name.startswith(_FLAGS):
        return False
    if "dtype" in name.lower():
        return "tl.float32"  # a tl.dtype, named (the worker makes it one)
    if name.lower() in _FLOATS or name.lower().endswith(("_scale", "eps")):
        return 1e-6 if "eps" in name.lower() else 1.0
    return 64


def _type_of(value) -> str | None:
    """A launch argument's Triton type, from :func:`runner.kernels.find._site_value`, as Triton's
    ``specialize_impl`` types it (a bool is ``u1``)."""
    if value is None:
        return None
    kind, v = value
    if kind == "tensor":
        return f"*{v}"
    if isinstance(v, bool):
        return "u1"
    if isinstance(v, int):
        return "i32" if -2**31 <= v < 2**31 else "i64"
    return "fp32" if isinstance(v, float) else None


def _spec(kernel: Kernel, site: dict, warps, stages, how: str) -> dict:
    """One specialisation: ``site`` (:func:`_from_site`: ``given`` constexpr values, ``types``,
    ``aligned`` names) over the defaults and guesses."""
    signature, constexprs, guessed = {}, {}, []
    given, types = site["given"], site["types"]
    enums = None  # compared_values(kernel), read once a constexpr needs a guess
    for name, is_constexpr, default in kernel.params:
        if is_constexpr or name in given:  # an int argument of 1 is a constexpr to Triton
            signature[name] = "constexpr"
            if name in given:
                constexprs[name] = given[name]
            elif default is not None:
                constexprs[name] = default
            else:  # a @triton.heuristics value or none at all
                enums = compared_values(kernel) if enums is None else enums
                constexprs[name] = _guess_constexpr(name, enums.get(name))
                guessed.append(name)
        elif name in types:
            signature[name] = types[name]
        else:
            signature[name] = _guess_type(name, kernel.addresses)
            guessed.append(name)
    aligned = [i for i, (name, _, _) in enumerate(kernel.params)
               if signature[name].startswith("*") or name in site["aligned"]]
    spec = {"signature": signature, "constexprs": constexprs,
            "num_warps": int(warps or site["warps"] or NUM_WARPS),
            "num_stages": int(stages or site["stages"] or NUM_STAGES),
            "aligned": aligned, "how": how, "guessed": guessed}
    spec["label"] = label(spec)
    return spec


def label(spec: dict) -> str:
    """A short name of a specialisation: ``BLOCK=128 num_warps=4 num_stages=3``."""
    values = " ".join(f"{k}={v}" for k, v in spec["constexprs"].items())
    return f"{values} num_warps={spec['num_warps']} num_stages={spec['num_stages']}".strip()


_NO_SITE = {"given": {}, "types": {}, "aligned": set(), "warps": None, "stages": None}


def _from_site(kernel: Kernel, site: dict) -> dict:
    """A launch site's ``{given (constexpr values), types, aligned (int arguments divisible by
    16: Triton's ``tt.divisibility``), warps, stages}``; an int argument of 1 is given as a
    constexpr, as Triton specialises it."""
    names = [p[0] for p in kernel.params]
    bound = dict(zip(names, site["args"]))
    bound.update({k: v for k, v in site["kwargs"].items() if k in names})
    constexpr = {p[0] for p in kernel.params if p[1]}
    ints = {k: v[1] for k, v in bound.items() if k not in constexpr and v and v[0] == "value"
            and isinstance(v[1], int) and not isinstance(v[1], bool)}
    given = {k: v[1] for k, v in bound.items() if k in constexpr and v and v[0] == "value"}
    given.update({k: 1 for k, v in ints.items() if v == 1})
    types = {k: t for k, v in bound.items() if k not in constexpr and (t := _type_of(v))}
    warps, stages = (site["kwargs"].get(k) for k in ("num_warps", "num_stages"))
    return {"given": given, "types": types,
            "aligned": {k for k, v in ints.items() if v != 1 and v % 16 == 0},
            "warps": warps[1] if warps and warps[0] == "value" else None,
            "stages": stages[1] if stages and stages[0] == "value" else None}


def specs_for(kernel: Kernel, sites: list[dict]) -> list[dict]:
    """The specialisations of ``kernel`` from its autotune configs and its launch ``sites``
    (those of :func:`runner.kernels.find.launch_sites` naming it), else one by default; each
    ``{signature, constexprs, num_warps, num_stages, aligned (argument indices), how, guessed,
    label}``, duplicates dropped. An autotuned kernel's launch site gives its arguments, each
    config its constexprs, warps and stages."""
    out: list[dict] = []
    first = _from_site(kernel, sites[0]) if sites else _NO_SITE
    if kernel.configs:
        for c in kernel.configs:
            site = {**first, "given": {**first["given"], **c["kwargs"]}, "warps": None,
                    "stages": None}
            out.append(_spec(kernel, site, c["num_warps"], c["num_stages"], "autotune config"))
    elif sites:
        for site in sites[:MAX_SITES]:
            out.append(_spec(kernel, _from_site(kernel, site), None, None, "launch site"))
    else:
        out.append(_spec(kernel, _NO_SITE, None, None, "default"))
    unique: dict[str, dict] = {}
    for s in out:
        unique.setdefault(repr((s["signature"], s["constexprs"], s["num_warps"],
                                s["num_stages"], s["aligned"])), s)
    return list(unique.values())


def from_capture(kernel: Kernel, captured: list[dict]) -> list[dict]:
    """Specialisations captured at launch (``{signature, constexprs, num_warps, num_stages,
    aligned}`` as the ``jit_cache_hook`` saw them), marked ``how="launch"``."""
    out = []
    for c in captured:
        spec = {"signature": dict(c["signature"]), "constexprs": dict(c["constexprs"]),
                "num_warps": int(c.get("num_warps", NUM_WARPS)),
                "num_stages": int(c.get("num_stages", NUM_STAGES)),
                "aligned": list(c.get("aligned", [])),
                "how": "launch", "guessed": []}
        spec["label"] = label(spec)
        if spec not in out:
            out.append(spec)
    return out

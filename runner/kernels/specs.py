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
what it holds is loaded and used as an offset (labels, indices); a parameter whose name is, or
has a ``_``-separated word that is, a float's (:func:`float_name`: ``eps``, ``EPS_LOW``,
``SAPO_TEMP_POS``, ``DELTA``) is ``fp32``; a ``stride``/``n_cols``/other parameter is an ``i32``.
The pointers are read from the code the guessed constexprs leave live
(:func:`live_function`: under ``if not IS_SEQLEN_OFFSETS_TENSOR:`` a parameter added to an
index is an int, in the other branch it is loaded through; only the branch the flag selects is
compiled). A constexpr without a value is, where the kernel uses it as an enum (only compares
it: ``if LOSS_TYPE == 0: ... elif LOSS_TYPE == 1: ...``, :func:`compared_values`), the first
value it is compared with (64 would match no branch, and a variable bound in every branch would
be undefined on both sides); False where it is a flag: named ``HAS_*``/``IS_*``/``USE_*``/...,
or only tested for truth (``if has_dS_out:``, ``if not INTERLEAVED:``, :func:`condition_flags`);
``tl.float32`` when its name holds ``dtype``; 1e-6 for an ``eps`` and 1.0 for another float's
name (:func:`float_name`); else 64 (a block size). Base and head are compiled with the same
guess where both have the parameter; where they do not (head gained a constexpr, or a parameter
changed kind) the row says so and makes no finding (runner.kernels.table).
"""

from __future__ import annotations

import ast
import builtins

from .evaluate import evaluate, run_body
from .find import Kernel, address_params

#: Triton's defaults for CUDA targets.
NUM_WARPS, NUM_STAGES = 4, 3
#: Specialisations per kernel read from launch sites at most (each is compiled per arch).
MAX_SITES = 4
_FLOATS = ("eps", "scale", "alpha", "beta", "gamma", "temperature", "softcap", "momentum", "lr",
           "weight_decay", "p", "dropout_p", "sm_scale", "softmax_scale", "label_smoothing")
_FLAGS = ("HAS_", "IS_", "USE_", "EVEN_", "ENABLE_", "RETURN_", "DO_", "APPLY_")


_INTS = ("stride", "size", "numel", "len", "count", "num_", "n_", "offset")
#: Words of a name (split at ``_``) that make it a float: ``EPS_LOW``, ``SAPO_TEMP_POS``.
_FLOAT_WORDS = frozenset(("eps", "epsilon", "temp", "temperature", "delta", "beta", "alpha",
                          "gamma", "scale", "softcap", "momentum", "lr", "smoothing", "lambda",
                          "coef", "coeff", "tau", "margin", "decay"))
#: Words that make a name a size or an index whatever else it holds: ``Scale_row_stride``.
_INT_WORDS = frozenset(("stride", "size", "numel", "len", "count", "num", "n", "offset",
                        "offsets", "block", "ptr", "idx", "index", "dim", "rows", "cols"))


def float_name(name: str) -> bool:
    """Whether ``name`` reads as a float's: one of :data:`_FLOATS`, ending ``_scale``/``_eps``,
    or holding a word of :data:`_FLOAT_WORDS` between underscores and none of
    :data:`_INT_WORDS` (``EPS_HIGH``, ``DELTA``; not ``BLOCK_N``, ``TEMPLATE`` nor
    ``Scale_row_stride``)."""
    lower = name.lower()
    words = lower.split("_")
    return (lower in _FLOATS or lower.endswith(("_scale", "_eps"))
            or (any(w in _FLOAT_WORDS for w in words) and not any(w in _INT_WORDS for w in words)))


def _guess_type(name: str, addresses: dict) -> str:
    lower = name.lower()
    if name in addresses.get("index_pointers", ()):
        return "*i64"  # indices and labels: torch's long
    if "ptr" in lower or name in addresses.get("pointers", ()):
        return "*fp32"
    if float_name(name):
        return "fp32"
    if any(word in lower for word in _INTS) or lower.startswith("n"):
        return "i32"
    if name[:1].isupper() and (name in addresses.get("opaque", ())
                               or not addresses.get("reads_memory", True)):
        # a lone capital handed on is a size as often as a tensor (M, N, K, D): it is one
        # where it reaches no address; longer capitalised names (Out, DO, Bias) are tensors
        return "*fp32" if len(name) > 1 or name in "QVOXYWAB" else "i32"
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


def _uses(kernel: Kernel):
    """``(function, env, parents, uses)`` of ``kernel``: its parsed function, the module values
    it reads, each node's parent and its ``tl.constexpr`` parameters' loads in source order;
    None where its source does not parse."""
    try:
        fn = next(s for s in ast.parse(kernel.source).body if isinstance(s, ast.FunctionDef))
        env: dict = {}
        run_body([st for src in kernel.uses.values() for st in ast.parse(src).body], env)
    except (SyntaxError, StopIteration):
        return None
    constexprs = {name for name, is_constexpr, _ in kernel.params if is_constexpr}
    parents = {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
    uses = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in constexprs
                   and isinstance(n.ctx, ast.Load)), key=lambda n: (n.lineno, n.col_offset))
    return fn, env, parents, uses


def _handed_on(use: ast.Name, parent: ast.AST | None) -> bool:
    """``use`` is an argument of a call of a bare name other than a builtin (a helper)."""
    return (isinstance(parent, ast.Call) and use in parent.args
            and isinstance(parent.func, ast.Name) and not hasattr(builtins, parent.func.id))


def compared_values(kernel: Kernel) -> dict[str, list]:
    """The ``tl.constexpr`` parameters ``kernel`` uses as an enum, ``{name: [values]}`` in the
    order its source compares them: each one whose every use is ``==``/``!=`` against a value
    (``LOSS_TYPE == 1``; ``mode != _MODE_B`` where the module has ``_MODE_B: tl.constexpr =
    tl.constexpr(1)``), ``in`` a literal tuple, or an argument handed on to a helper (a call of
    a bare name other than a builtin: it may compare it too). One used otherwise
    (``tl.arange(0, BLOCK)``, ``if FLAG:``, arithmetic) is a size or a flag: not listed. Read
    from ``kernel.source`` and ``kernel.uses`` alone."""
    read = _uses(kernel)
    if read is None:
        return {}
    _, env, parents, uses = read
    found: dict[str, list] = {}
    other: set[str] = set()
    for use in uses:
        parent = parents.get(use)
        values = _compared(use, parent, env)
        if values is not None:
            seen = found.setdefault(use.id, [])
            seen += [v for v in values if v not in seen]
        elif not _handed_on(use, parent):
            other.add(use.id)  # not handed on to a helper (tl.arange(0, BLOCK), range(N))
    return {name: v for name, v in found.items() if name not in other}


def condition_flags(kernel: Kernel) -> set[str]:
    """The ``tl.constexpr`` parameters ``kernel`` only tests for truth: each use the test of an
    ``if``/``while``/``assert`` or of a conditional expression, alone, under ``not`` or in an
    ``and``/``or`` (``if has_dS_out:``, ``if not INTERLEAVED and X:``), or handed on to a
    helper, and one use at least a test. A flag, guessed False (a bool), where 64 would be
    taken as true and compile a branch the default launch does not."""
    read = _uses(kernel)
    if read is None:
        return set()
    _, _, parents, uses = read
    tested: set[str] = set()
    other: set[str] = set()
    for use in uses:
        node, parent = use, parents.get(use)
        while isinstance(parent, (ast.BoolOp, ast.UnaryOp)) and (
                isinstance(parent, ast.BoolOp) or isinstance(parent.op, ast.Not)):
            node, parent = parent, parents.get(parent)
        if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is node:
            tested.add(use.id)
        elif not (node is use and _handed_on(use, parent)):
            other.add(use.id)
    return tested - other


class _Live(ast.NodeTransformer):
    """An ``if`` whose test the constexprs decide replaced by the branch it takes."""

    def __init__(self, env: dict):
        self.env, self.pruned = env, False

    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        try:
            taken = bool(evaluate(node.test, self.env))
        except (ValueError, TypeError, ZeroDivisionError, KeyError, IndexError, AttributeError):
            return node
        self.pruned = True
        return (node.body if taken else node.orelse) or ast.Pass()


def live_function(kernel: Kernel, constexprs: dict) -> ast.FunctionDef | None:
    """``kernel``'s function with each ``if`` whose test ``constexprs`` (and the module values it
    reads) decide replaced by the branch taken, as Triton compiles it (``if not IS_TENSOR:``
    with ``IS_TENSOR`` False keeps its body, drops its ``else``); None where no ``if`` is
    decided (or the source does not parse): the whole function is live."""
    read = _uses(kernel)
    if read is None:
        return None
    fn, env, _, _ = read
    live = _Live({**env, **constexprs})
    fn = live.visit(fn)
    return fn if live.pruned else None


def _addresses(kernel: Kernel, constexprs: dict) -> dict:
    """:func:`runner.kernels.find.address_params` of the code ``constexprs`` leave live
    (:func:`live_function`), else ``kernel.addresses``."""
    fn = live_function(kernel, constexprs)
    return kernel.addresses if fn is None else address_params(fn)


def _guess_constexpr(name: str, compared: list | None = None, flag: bool = False):
    """A constexpr's value where nothing gives one: the first of the values the kernel compares
    it with (``compared``, :func:`compared_values`), False for a ``flag``
    (:func:`condition_flags`) or a flag's name, else by its name (the module's docstring)."""
    if compared:
        return compared[0]
    if flag or name.startswith(_FLAGS):
        return False
    if "dtype" in name.lower():
        return "tl.float32"  # a tl.dtype, named (the worker makes it one)
    if float_name(name):
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
    signature, constexprs, guessed = {}, {}, set()
    given, types = site["given"], site["types"]
    enums = flags = None  # compared_values / condition_flags, read once a constexpr needs a guess
    for name, is_constexpr, default in kernel.params:
        if is_constexpr or name in given:  # an int argument of 1 is a constexpr to Triton
            signature[name] = "constexpr"
            if name in given:
                constexprs[name] = given[name]
            elif default is not None:
                constexprs[name] = default
            else:  # a @triton.heuristics value or none at all
                if enums is None:
                    enums, flags = compared_values(kernel), condition_flags(kernel)
                constexprs[name] = _guess_constexpr(name, enums.get(name), name in flags)
                guessed.add(name)
    addresses = None  # of the code the constexprs leave live, read once a type needs a guess
    for name, _, _ in kernel.params:
        if name in signature:
            continue
        if name in types:
            signature[name] = types[name]
        else:
            addresses = _addresses(kernel, constexprs) if addresses is None else addresses
            signature[name] = _guess_type(name, addresses)
            guessed.add(name)
    signature = {name: signature[name] for name, _, _ in kernel.params}
    guessed = [name for name, _, _ in kernel.params if name in guessed]
    aligned = [i for i, (name, _, _) in enumerate(kernel.params)
               if signature[name].startswith("*") or name in site["aligned"]]
    spec = {"signature": signature, "constexprs": constexprs,
            "num_warps": int(warps or site["warps"] or NUM_WARPS),
            "num_stages": int(stages or site["stages"] or NUM_STAGES),
            "aligned": aligned, "how": how, "guessed": guessed}
    spec["label"] = label(spec)
    return spec


#: Argument types a label leaves unsaid: a fresh fp32 tensor, a size, a float, a flag.
PLAIN_TYPES = frozenset({"*fp32", "i32", "fp32", "i1", "constexpr"})


def label(spec: dict) -> str:
    """A short name of a specialisation: ``BLOCK=128 num_warps=4 num_stages=3``, then the
    argument types where any is not plain (:data:`PLAIN_TYPES`): the type most pointers share
    (unsaid where it is ``*fp32``), and each other argument of a type of its own (``*bf16
    RSTD_ptr:*fp32 n_rows:i64``); two launches that differ only in their tensors' dtype are two
    names."""
    values = " ".join(f"{k}={v}" for k, v in spec["constexprs"].items())
    text = f"{values} num_warps={spec['num_warps']} num_stages={spec['num_stages']}".strip()
    types = {k: t for k, t in spec["signature"].items() if t != "constexpr"}
    if set(types.values()) <= PLAIN_TYPES:
        return text
    pointers = [t for t in types.values() if t.startswith("*")]
    common = max(dict.fromkeys(pointers), key=pointers.count) if pointers else None
    own = [f"{k}:{t}" for k, t in types.items()
           if (t != common if t.startswith("*") else t not in PLAIN_TYPES)]
    return " ".join([text, *([common] if common not in (None, "*fp32") else []), *own])


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

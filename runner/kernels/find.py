"""Triton kernels in Python source, read with :mod:`ast` (pure: text in, plain data out).

A kernel is a module-level function decorated with ``triton.jit`` (``@triton.jit``, ``@jit``,
``@triton.jit(...)``), possibly under ``@triton.autotune(...)`` and ``@triton.heuristics(...)``.
For each, :func:`kernels_in` records what decides its machine code and can be read without
running anything: its parameters (which are ``tl.constexpr``, their defaults), its source with its
decorators, the source of the module-level names it reads (constants, a ``CONFIGS`` list, a
``get_configs()`` function), the names it calls (other ``@triton.jit`` helpers: a kernel changes
when one of them does, :func:`fingerprints`), and its autotune configs when they are written
where simple code makes them (a list, a comprehension, a function of loops and appends:
:mod:`runner.kernels.evaluate`). :func:`launch_sites` reads the calls ``kernel[grid](args...,
BLOCK=128, num_warps=4)`` of a file: the values passed where literals, constants and arithmetic
make them, and the dtype of a tensor argument made in the same function with
``dtype=torch.float16``.

Why source (and not the compiled cache of a run): it needs no GPU, no run of the benchmark and
no import of the target's code, so the command answers for a PR nobody has run yet; the launch
capture that gives the exact specialisations is the better source when a benchmark runs (see
:mod:`runner.kernels.specs`).
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

from .evaluate import STEPS, evaluate, run_body

_TRITON_NAMES = ("jit", "autotune", "heuristics")


@dataclass
class Kernel:
    """One ``@triton.jit`` function of one file (``path``: repository-relative, ``/``).

    ``params``: ``[(name, is_constexpr, default or None)]``; ``source``: the function with its
    decorators; ``uses``: the source of each module-level name it reads (decorators included);
    ``calls``: the bare names it calls; ``configs``: the autotune configs as
    ``[{"kwargs": {...}, "num_warps": int | None, "num_stages": int | None}]`` (None: no
    autotune), ``configs_note``: why configs could not be read; ``heuristics``: the names a
    ``@triton.heuristics`` computes; ``addresses``: :func:`address_params`. Helpers
    (``@triton.jit`` functions other kernels call) are kernels too: a launch site or the calls of
    the others tell them apart."""

    name: str
    path: str
    line: int
    params: list = field(default_factory=list)
    source: str = ""
    uses: dict = field(default_factory=dict)
    calls: list = field(default_factory=list)
    configs: list | None = None
    configs_note: str = ""
    heuristics: list = field(default_factory=list)
    addresses: dict = field(default_factory=dict)


def decorator_name(node: ast.expr) -> str:
    """``triton.jit`` / ``jit`` / ``triton.autotune(...)`` → ``jit`` / ``autotune``; else ''."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr if node.attr in _TRITON_NAMES else ""
    if isinstance(node, ast.Name):
        return node.id if node.id in _TRITON_NAMES else ""
    return ""


def _is_constexpr(annotation: ast.expr | None) -> bool:
    return annotation is not None and "constexpr" in ast.unparse(annotation)


def _configs(node: ast.expr, env: dict, functions: dict[str, ast.FunctionDef]) -> list[dict]:
    """The configs an ``autotune(configs=...)`` argument gives: an expression :func:`evaluate`
    follows (a list, a comprehension, a module-level name bound to one), or a call of a
    module-level function without arguments that :func:`run_body` follows. ValueError else."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args
            and node.func.id in functions):
        value = run_body(functions[node.func.id].body, dict(env))
    else:
        value = evaluate(node, env)
    if not (isinstance(value, list) and all(isinstance(c, dict) and "kwargs" in c
                                            for c in value)):
        raise ValueError(f"configs={ast.unparse(node)[:60]} is not a list of triton.Config")
    return value


def _module_names(tree: ast.Module) -> tuple[dict[str, str], dict[str, ast.FunctionDef]]:
    """Module-level names → their statement's source; functions (not ``@triton.jit``) → their
    definition."""
    sources: dict[str, str] = {}
    functions: dict[str, ast.FunctionDef] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and not any(
                decorator_name(d) for d in getattr(stmt, "decorator_list", [])):
            sources[stmt.name] = ast.unparse(stmt)
            if isinstance(stmt, ast.FunctionDef):
                functions[stmt.name] = stmt
        for t in targets:
            if isinstance(t, ast.Name):
                sources[t.id] = ast.unparse(stmt)
    return sources, functions


def kernels_in(text: str, path: str, tree: ast.Module | None = None) -> list[Kernel]:
    """Every ``@triton.jit`` function at the top level of ``text`` (the file ``path``; ``tree``:
    its parse, when the caller has it).

    Raises:
        SyntaxError: ``text`` is not Python.
    """
    tree = tree or ast.parse(text)
    names, functions = _module_names(tree)
    env: dict = {}
    run_body([st for st in tree.body if isinstance(st, (ast.Assign, ast.AugAssign))], env)
    out = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            continue
        decorators = [decorator_name(d) for d in stmt.decorator_list]
        if "jit" not in decorators:
            continue
        k = Kernel(stmt.name, path, stmt.lineno)
        args = stmt.args.args
        defaults = [None] * (len(args) - len(stmt.args.defaults)) + list(stmt.args.defaults)
        for a, d in zip(args, defaults):
            try:
                value = evaluate(d, env) if d is not None else None
            except (ValueError, TypeError, ZeroDivisionError, KeyError, IndexError):
                value = None
            k.params.append((a.arg, _is_constexpr(a.annotation), value))
        k.source = "\n".join(ast.unparse(d) for d in stmt.decorator_list) + "\n" + ast.unparse(stmt)
        read = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        k.uses = {n: names[n] for n in sorted(read & names.keys())}
        k.addresses = address_params(stmt)
        k.calls = sorted({n.func.id for n in ast.walk(stmt) if isinstance(n, ast.Call)
                          and isinstance(n.func, ast.Name)} - {stmt.name})
        for d in stmt.decorator_list:
            if decorator_name(d) == "autotune" and isinstance(d, ast.Call):
                kw = {x.arg: x.value for x in d.keywords}
                try:
                    k.configs = _configs(kw.get("configs", d.args[0] if d.args else None),
                                         env, functions)
                except (ValueError, SyntaxError, TypeError, IndexError, KeyError) as exc:
                    k.configs, k.configs_note = [], f"autotune configs not read statically: {exc}"
            elif decorator_name(d) == "heuristics" and isinstance(d, ast.Call) and d.args:
                if isinstance(d.args[0], ast.Dict):
                    k.heuristics = [ast.literal_eval(key) for key in d.args[0].keys
                                    if isinstance(key, ast.Constant)]
        out.append(k)
    return out


def triton_only(text: str) -> str:
    """``text`` (a Python file) reduced to what its kernels need, every other line blanked so that
    line numbers (and the cubin's line table) stay the file's: the imports of ``triton``, the
    top-level functions under a triton decorator and the assignments that name ``constexpr``
    (the only globals a Triton 3 kernel may read). What a package that cannot be imported here
    (it wants a GPU, a CUDA extension, a dependency not installed) still compiles from.

    Raises:
        SyntaxError: ``text`` is not Python.
    """
    lines = text.splitlines()
    keep = [False] * len(lines)
    for node in ast.parse(text).body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            wanted = any(n.split(".")[0] == "triton" for n in names)
        elif isinstance(node, ast.FunctionDef):
            wanted = any("triton" in ast.unparse(d) for d in node.decorator_list)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            wanted = "constexpr" in (ast.get_source_segment(text, node) or "")
        else:
            wanted = False
        if wanted:
            keep[first - 1:node.end_lineno] = [True] * (node.end_lineno - first + 1)
    return "\n".join(line if k else "" for line, k in zip(lines, keep)) + "\n"


#: Triton calls whose first argument is an address (a pointer, or a tensor of pointers).
_MEMORY = ("load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
           "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor")


def _terms(node: ast.expr) -> list[ast.expr]:
    """The operands of a ``+``/``-`` chain (``X + row * stride + cols`` → X, row * stride,
    cols); a pointer is one of them, never inside a product."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        return _terms(node.left) + _terms(node.right)
    if isinstance(node, ast.Subscript):  # ptrs[:, None]
        return _terms(node.value)
    return [node]


def address_params(fn: ast.FunctionDef) -> dict:
    """``{"pointers": [...], "index_pointers": [...], "opaque": [...], "reads_memory": bool}`` of
    a kernel: the parameters that reach the address of a ``tl.load``/``tl.store``/... as a term of
    a sum, through local names (``a_ptrs = a_ptr + offs``, ``X += row * stride``);
    ``index_pointers``: those whose loaded values are themselves address terms (``y =
    tl.load(Y_ptr)``, ``tl.load(X_ptr + y)``: labels, indices; a parameter added to such a value,
    ``y -= class_start``, is an offset, not a pointer); ``opaque``: the parameters passed
    on to another function (a helper may load through them); ``reads_memory``: the kernel itself
    loads or stores."""
    params = {a.arg for a in fn.args.args}
    feeds: dict[str, set[str]] = {}
    loaded: dict[str, set[str]] = {}  # a name bound to tl.load(address): the address's names
    for n in ast.walk(fn):
        targets, value = [], None
        if isinstance(n, ast.Assign):
            targets, value = n.targets, n.value
            inner = _unwrap(value)
            if isinstance(inner, ast.Call) and ast.unparse(inner.func).split(".")[-1] == "load":
                for t in targets:
                    if isinstance(t, ast.Name) and inner.args:
                        loaded.setdefault(t.id, set()).update(
                            x.id for x in _terms(inner.args[0]) if isinstance(x, ast.Name))
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Add, ast.Sub)):
            targets, value = [n.target], n.value
            feeds.setdefault(getattr(n.target, "id", ""), set()).add(getattr(n.target, "id", ""))
        for t in targets:
            if isinstance(t, ast.Name):
                feeds.setdefault(t.id, set()).update(
                    x.id for x in _terms(value) if isinstance(x, ast.Name))
    start, opaque, memory = set(), set(), False
    for n in ast.walk(fn):
        if not isinstance(n, ast.Call):
            continue
        name = ast.unparse(n.func).split(".")[-1]
        if name in _MEMORY and (n.args or n.keywords):
            memory = True
            first = n.args[0] if n.args else n.keywords[0].value
            start.update(x.id for x in _terms(first) if isinstance(x, ast.Name))
        elif isinstance(n.func, ast.Name):
            opaque.update(a.id for a in n.args if isinstance(a, ast.Name) and a.id in params)
    seen = _reach(start, feeds, values=set(loaded))
    index = _reach({p for n in seen for p in loaded.get(n, ())}, feeds)
    return {"pointers": sorted(seen & params), "index_pointers": sorted(index & params),
            "opaque": sorted(opaque - seen), "reads_memory": memory}


def _reach(start: set[str], feeds: dict[str, set[str]], values: set[str] = frozenset()
           ) -> set[str]:
    """``start`` and every name that feeds one of them, transitively; not through ``values``
    (names bound to a loaded value: ``y = tl.load(Y)``, ``y -= start``, ``tl.load(X + y)``:
    what feeds ``y`` is an offset, not a pointer)."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [x for x in feeds.get(name, ()) if x != name and name not in values]
    return seen


def _unwrap(node: ast.expr) -> ast.expr:
    """``tl.load(p).to(tl.float32)`` → ``tl.load(p)`` (casts chained on a value)."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in ("to", "cast", "astype")):
        node = node.func.value
    return node


def fingerprints(kernels: list[Kernel]) -> dict[tuple[str, str], str]:
    """``(path, name)`` → a SHA-256 of what decides the kernel's code: its source and decorators,
    the module-level names it reads, and (transitively) the fingerprints of the ``@triton.jit``
    functions it calls, found by name in the same file first, else anywhere in ``kernels``."""
    by_key = {(k.path, k.name): k for k in kernels}
    by_name: dict[str, list[Kernel]] = {}
    for k in kernels:
        by_name.setdefault(k.name, []).append(k)
    done: dict[tuple[str, str], str] = {}

    def of(k: Kernel, seen: frozenset) -> str:
        key = (k.path, k.name)
        if key in done:
            return done[key]
        h = hashlib.sha256(k.source.encode())
        for name, src in k.uses.items():
            h.update(f"\0{name}\0{src}".encode())
        for callee in k.calls:
            dep = by_key.get((k.path, callee)) or next(iter(by_name.get(callee, [])), None)
            if dep is not None and (dep.path, dep.name) not in seen:
                h.update(f"\0call\0{callee}\0{of(dep, seen | {key})}".encode())
        done[key] = h.hexdigest()
        return done[key]

    for k in kernels:
        of(k, frozenset())
    return done


_DTYPES = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32",
           "float": "fp32", "float64": "fp64", "double": "fp64", "int32": "i32", "int64": "i64",
           "int8": "i8", "uint8": "u8", "int16": "i16", "bool": "i1", "float8_e4m3fn": "fp8e4nv",
           "float8_e5m2": "fp8e5"}


def _tensor_dtypes(func: ast.AST) -> dict[str, str]:
    """Names bound in ``func`` to a call with ``dtype=torch.X`` → X in Triton's words."""
    out = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            for kw in n.value.keywords:
                if (kw.arg == "dtype" and isinstance(kw.value, ast.Attribute)
                        and kw.value.attr in _DTYPES):
                    for t in n.targets:
                        if isinstance(t, ast.Name):
                            out[t.id] = _DTYPES[kw.value.attr]
    return out


def _site_value(node: ast.expr, dtypes: dict[str, str], env: dict):
    """A launch argument: ``("value", v)`` for a value :func:`evaluate` finds (a literal, a
    constant of the module or of the function, arithmetic over them), ``("tensor", dtype)`` for
    a tensor of known dtype, None else."""
    try:
        value = evaluate(node, env)
        if isinstance(value, (bool, int, float, str)):
            return ("value", value)
    except (ValueError, TypeError, ZeroDivisionError, KeyError, IndexError):
        pass
    if isinstance(node, ast.Name) and node.id in dtypes:
        return ("tensor", dtypes[node.id])
    return None


def launch_sites(text: str, path: str, tree: ast.Module | None = None) -> list[dict]:
    """Every ``name[grid](...)`` / ``mod.name[grid](...)`` call in ``text``: ``{kernel, path,
    line, text (the call, as ast.unparse writes it), args: [value or None], kwargs: {name:
    value}}``, each value ``("value", v)`` or
    ``("tensor", dtype)`` (:func:`_site_value`), None where it cannot be read statically.

    Raises:
        SyntaxError: ``text`` is not Python.
    """
    tree = tree or ast.parse(text)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Subscript) and not any(
                 isinstance(a, ast.Starred) for a in n.args)]
    if not calls:
        return []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    module_env: dict = {}
    run_body([st for st in tree.body if isinstance(st, (ast.Assign, ast.AugAssign))], module_env)
    scopes: dict[ast.AST, tuple[dict, dict]] = {}
    found: dict[tuple[int, int], dict] = {}
    for n in calls:
        target = n.func.value
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name is None:
            continue
        scope = parents.get(n)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = parents.get(scope)
        if scope not in scopes:  # the innermost function: its constants and tensors' dtypes
            env = {**module_env, STEPS: [0]}
            if scope is not None:
                run_body(scope.body, env)
            scopes[scope] = (env, _tensor_dtypes(scope) if scope is not None else {})
        env, dtypes = scopes[scope]
        found[(n.lineno, n.col_offset)] = {
            "kernel": name, "path": path, "line": n.lineno, "text": ast.unparse(n),
            "args": [_site_value(a, dtypes, env) for a in n.args],
            "kwargs": {k.arg: _site_value(k.value, dtypes, env) for k in n.keywords
                       if k.arg}}
    return [found[k] for k in sorted(found)]

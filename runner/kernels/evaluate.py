"""A tiny evaluator of the Python that writes Triton settings (pure): literals, names bound
earlier, arithmetic, comparisons, comprehensions, ``range``, ``triton.next_power_of_2``,
``tl.constexpr(v)`` (as ``v``) and ``triton.Config`` (as ``{kwargs, num_warps, num_stages}``),
and straight-line statements over
them (assignments, ``for`` over values, ``if``, ``append``/``extend``, ``return``). Nothing of the
target runs: any other call, attribute or name is "unknown" (ValueError), and the work is bounded
(:data:`MAX_VALUES`, :data:`MAX_STEPS`).

Autotune configs are often built by code (``[triton.Config({"BM": bm}, num_warps=w) for bm in
(64, 128) for w in WARPS]``, a ``get_configs()`` of loops), and launch sites pass names bound a
few lines above (``BLOCK = triton.next_power_of_2(1000)``): :mod:`runner.kernels.find` reads
both through here.
"""

from __future__ import annotations

import ast

#: Values one evaluation may make at most (a comprehension over ranges stops there), and the
#: statements :func:`run_body` follows at most (counted in ``env`` under ``STEPS``).
MAX_VALUES, MAX_STEPS, STEPS = 4096, 20000, "\0steps"
_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
           ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b if abs(b) < 64 else _refuse(),
           ast.LShift: lambda a, b: a << b if b < 64 else _refuse()}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _refuse():
    raise ValueError("too large to evaluate")


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _call(node: ast.Call, env: dict):
    name = ast.unparse(node.func).split(".")[-1]
    args = [evaluate(a, env) for a in node.args]
    kw = {k.arg: evaluate(k.value, env) for k in node.keywords if k.arg}
    if name == "Config":  # triton.Config(kwargs, num_warps, num_stages, ...)
        out = {"kwargs": dict(args[0] if args else kw.get("kwargs", {})),
               "num_warps": args[1] if len(args) > 1 else kw.get("num_warps"),
               "num_stages": args[2] if len(args) > 2 else kw.get("num_stages")}
        return out
    simple = {"range": lambda *a: list(range(*a)), "next_power_of_2": _next_power_of_2,
              "min": min, "max": max, "len": len, "int": int, "list": list, "dict": dict,
              "constexpr": lambda v: v}  # tl.constexpr(0): a module-level constant of a kernel
    if name not in simple or (name == "range" and len(range(*args)) > MAX_VALUES):
        raise ValueError(f"cannot evaluate {ast.unparse(node)[:60]}")
    return simple[name](*args, **kw)


def _comprehension(node: ast.ListComp, env: dict, generators: list) -> list:
    if not generators:
        return [evaluate(node.elt, env)]
    g, out = generators[0], []
    for item in evaluate(g.iter, env):
        inner = _bind(g.target, item, dict(env))
        if all(evaluate(c, inner) for c in g.ifs):
            out += _comprehension(node, inner, generators[1:])
            if len(out) > MAX_VALUES:
                _refuse()
    return out


def _bind(target: ast.expr, value, env: dict) -> dict:
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(value):
        for t, v in zip(target.elts, value):
            _bind(t, v, env)
    else:
        raise ValueError(f"cannot bind {ast.unparse(target)[:40]}")
    return env


def evaluate(node: ast.expr | None, env: dict):
    """The value of an expression made of literals, the names of ``env``, arithmetic,
    comparisons, list comprehensions, ``range``, ``triton.next_power_of_2`` and ``triton.Config``
    (as ``{kwargs, num_warps, num_stages}``); nothing else is run.

    Raises:
        ValueError: anything else (a call, an attribute, an unknown name), or too many values.
    """
    if node is None:
        raise ValueError("no value")
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise ValueError(f"unknown name {node.id}")
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [evaluate(e, env) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {evaluate(k, env): evaluate(v, env) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        value = evaluate(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else not value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](evaluate(node.left, env), evaluate(node.right, env))
    if isinstance(node, ast.BoolOp):
        values = [evaluate(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(o) in _COMPARE for o in node.ops):
        left, ok = evaluate(node.left, env), True
        for op, right in zip(node.ops, node.comparators):
            value = evaluate(right, env)
            ok, left = ok and _COMPARE[type(op)](left, value), value
        return ok
    if isinstance(node, ast.IfExp):
        return evaluate(node.body if evaluate(node.test, env) else node.orelse, env)
    if isinstance(node, ast.ListComp):
        return _comprehension(node, env, node.generators)
    if isinstance(node, ast.Call):
        return _call(node, env)
    raise ValueError(f"cannot evaluate {ast.unparse(node)[:60]}")


def run_body(body: list[ast.stmt], env: dict) -> object:
    """Straight-line code over :func:`evaluate`: assignments (annotated too), ``+=``, ``for`` over
    values,
    ``if``, ``NAME.append(x)`` / ``NAME.extend(x)`` and ``return``; a statement it cannot follow
    makes the names it assigns unknown. Returns what a ``return`` gives, else None; ``env`` is
    updated in place."""
    steps = env.setdefault(STEPS, [0])
    for stmt in body:
        steps[0] += 1
        if steps[0] > MAX_STEPS:
            return None
        try:
            if isinstance(stmt, ast.Return):
                return evaluate(stmt.value, env)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                _bind(stmt.targets[0], evaluate(stmt.value, env), env)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                _bind(stmt.target, evaluate(stmt.value, env), env)  # MODE: tl.constexpr = ...
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                op = _BINARY[type(stmt.op)]
                env[stmt.target.id] = op(env[stmt.target.id], evaluate(stmt.value, env))
            elif isinstance(stmt, ast.For):
                for item in evaluate(stmt.iter, env):
                    _bind(stmt.target, item, env)
                    if run_body(stmt.body, env) is not None:
                        raise ValueError("a return inside a loop")
            elif isinstance(stmt, ast.If):
                found = run_body(stmt.body if evaluate(stmt.test, env) else stmt.orelse, env)
                if found is not None:
                    return found
            elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                  and isinstance(stmt.value.func, ast.Attribute)
                  and stmt.value.func.attr in ("append", "extend")):
                target = env[ast.unparse(stmt.value.func.value)]
                value = evaluate(stmt.value.args[0], env)
                target.append(value) if stmt.value.func.attr == "append" else target.extend(value)
                if len(target) > MAX_VALUES:
                    _refuse()
        except (ValueError, KeyError, TypeError, ZeroDivisionError, IndexError):
            for n in ast.walk(stmt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    env.pop(n.id, None)
    return None

"""Which kernels changed between base and head and what to compile for each (pure).

Input: each side's Python files that mention ``triton`` (path → text). A kernel is identified by
``(path, name)``; it is ``changed`` when its fingerprint (:func:`runner.kernels.find.fingerprints`:
its source and decorators, the module-level names it reads, the ``@triton.jit`` functions it
calls) differs between the sides, ``added``/``removed`` when one side lacks it, ``unchanged``
otherwise. A changed helper (a ``@triton.jit`` function other kernels call and nobody launches)
is compiled through its callers, which its change makes ``changed`` too.
"""

from __future__ import annotations

import ast

from .find import Kernel, decorator_name, fingerprints, kernels_in, launch_sites
from .specs import from_capture, specs_for

SIDES = ("base", "head")


def read_side(files: dict[str, str]) -> dict:
    """``{kernels: {(path, name): Kernel}, fingerprints, sites: {name: [site]}, errors:
    {path: message}}`` of one side's files (a file that does not parse is an error, not a
    kernel)."""
    kernels: list[Kernel] = []
    sites: dict[str, list[dict]] = {}
    errors: dict[str, str] = {}
    for path, text in sorted(files.items()):
        try:
            tree = ast.parse(text)
            kernels += kernels_in(text, path, tree)
            for site in launch_sites(text, path, tree):
                sites.setdefault(site["kernel"], []).append(site)
        except (SyntaxError, ValueError) as exc:
            errors[path] = f"{type(exc).__name__}: {exc}"
    return {"kernels": {(k.path, k.name): k for k in kernels},
            "fingerprints": fingerprints(kernels), "sites": sites, "errors": errors}


def _helpers(side: dict) -> dict[tuple[str, str], list[str]]:
    """Kernels other kernels call that are never launched nor autotuned → their callers."""
    callers: dict[str, list[str]] = {}
    for k in side["kernels"].values():
        for c in k.calls:
            callers.setdefault(c, []).append(k.name)
    return {key: sorted(callers[k.name]) for key, k in side["kernels"].items()
            if k.name in callers and k.name not in side["sites"] and k.configs is None}


def sites_of(side: dict, key: tuple[str, str]) -> list[dict]:
    """The launch sites (:func:`read_side`'s ``sites``) of the kernel ``key`` (path, name): the
    calls of its name, less those in another file that defines a kernel of that name itself (a
    backend's copy, ``ops/backends/_ascend/ops/dyt.py`` beside ``ops/dyt.py``: each file's calls
    launch its own)."""
    path, name = key
    others = {p for p, n in side["kernels"] if n == name and p != path}
    return [s for s in side["sites"].get(name, []) if s["path"] not in others]


def diff_kernels(base: dict, head: dict, captured: dict | None = None) -> list[dict]:
    """Every kernel of either side (:func:`read_side`): ``{path, name, line, status, why,
    helper_of, specs: {side: [spec]}, fingerprints, configs_note}``; ``status`` one of changed /
    added / removed / unchanged, ``why`` what changed (``source``: the kernel, its decorators or
    what it reads or calls; ``specialisations``: its autotune configs or launch sites; ``launch
    site``: the text of a call ``kernel[grid](...)``, whether or not its values can be read);
    ``helper_of``: the callers that compile it (then no specs of its own). ``captured``:
    ``{side: {(path, name): [record]}}``, launches captured (runner.kernels.capture); a kernel
    with some is specialised from them (``how="launch"``), the others from their source. A
    kernel launched on one side only, with the same parameters on both, is compiled on both
    with that side's launches (:func:`_launches`). Captured launches that differ do not make a
    kernel ``changed`` by themselves: without a GPU nothing runs, so a launch that reads an
    earlier kernel's output (Liger's MoE router sizes its grid from ``expert_tile_offset[-1]``)
    sees whatever memory held, and two runs of the same code launch differently; a change to the
    kernel or to its launch's text still shows (``source``, ``launch site``)."""
    sides = {"base": base, "head": head}
    helpers = {s: _helpers(sides[s]) for s in SIDES}
    out = []
    for key in sorted(base["kernels"].keys() | head["kernels"].keys()):
        have = {s: sides[s]["kernels"].get(key) for s in SIDES}
        helper_of = helpers["head"].get(key) or helpers["base"].get(key) or []
        launches = _launches(captured, key, have)
        specs = {} if helper_of else {
            s: (from_capture(k, launches[s]) if launches[s]
                else specs_for(k, sites_of(sides[s], key)))
            for s, k in have.items() if k is not None}
        why = []
        if have["base"] is None or have["head"] is None:
            status = "added" if have["base"] is None else "removed"
        else:
            if base["fingerprints"][key] != head["fingerprints"][key]:
                why.append("source")
            cores = {s: [_core(x) for x in specs.get(s, [])] for s in SIDES}
            if cores["base"] != cores["head"] and not any(launches.values()):
                why.append("specialisations")
            calls = {s: sorted(x["text"] for x in sites_of(sides[s], key)) for s in SIDES}
            if calls["base"] != calls["head"]:  # values it may not read: num_warps=f(dtype)
                why.append("launch site")
            status = "changed" if why else "unchanged"
        line = (have["head"] or have["base"]).line
        out.append({"path": key[0], "name": key[1], "line": line, "status": status, "why": why,
                    "helper_of": helper_of, "specs": specs,
                    "fingerprints": {s: sides[s]["fingerprints"].get(key) for s in SIDES},
                    "configs_note": (have["head"] or have["base"]).configs_note})
    return out


def _launches(captured: dict | None, key: tuple, have: dict) -> dict:
    """Each side's captured launch records of the kernel ``key``. Where only one side's command
    launched it (the PR changed the tests the capture runs: Liger #1271's ``test_swiglu.py``
    reached a MoE kernel on base only) and its parameters are the same on both sides, that
    side's launches stand for both: otherwise one side's real launches would be compared with
    the other's guesses, and the kernel reported changed by the capture's coverage alone."""
    launches = {s: ((captured or {}).get(s) or {}).get(key) for s in SIDES}
    one = [s for s in SIDES if launches[s]]
    if len(one) == 1 and all(have.values()) and have["base"].params == have["head"].params:
        launches = dict.fromkeys(SIDES, launches[one[0]])
    return launches


def _core(spec: dict) -> tuple:
    return (spec["signature"], spec["constexprs"], spec["num_warps"], spec["num_stages"],
            spec["aligned"])


def module_name(path: str, packages: set[str]) -> tuple[str | None, str]:
    """How the worker imports the repository-relative ``path``: ``(dotted name, the folder to put
    on sys.path)`` when the file's folder is a package (``packages``: the folders holding an
    ``__init__.py``), the name counted from the topmost package above it; ``(None, "")`` when it
    is not one (the worker imports the file by its path)."""
    parts = path.removesuffix(".py").split("/")
    folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
    if not folders or folders[-1] not in packages:
        return None, ""
    top = len(folders)
    while top > 0 and folders[top - 1] in packages:
        top -= 1
    name = parts[top:-1] if parts[-1] == "__init__" else parts[top:]
    return ".".join(name), "/".join(parts[:top])


def jobs_for(kernels: list[dict], archs: list[str], where: dict) -> list[dict]:
    """One compile job per kernel of :func:`diff_kernels`, side, specialisation and arch.
    ``where[side][path]`` → ``{paths, module, file}`` (how the worker imports that file). Each
    job carries ``id`` (``side|path|name|spec index|arch``) and the kernel's ``fingerprint``."""
    jobs = []
    for k in kernels:
        for side, specs in k["specs"].items():
            for i, spec in enumerate(specs):
                for arch in archs:
                    jobs.append({"id": f"{side}|{k['path']}|{k['name']}|{i}|{arch}",
                                 **where[side][k["path"]], "kernel": k["name"],
                                 "signature": spec["signature"], "constexprs": spec["constexprs"],
                                 "aligned": spec["aligned"], "num_warps": spec["num_warps"],
                                 "num_stages": spec["num_stages"], "arch": arch,
                                 "fingerprint": k["fingerprints"][side]})
    return jobs


def _outside_kernels(text: str) -> str:
    """The module with its ``@triton.jit`` functions left out, as :func:`ast.dump` writes it
    (comments and formatting do not count)."""
    tree = ast.parse(text)
    tree.body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and any(
        decorator_name(d) == "jit" for d in s.decorator_list))]
    return ast.dump(tree)


def same_machine_code(kernels: list[dict], files: dict[str, dict[str, str]]) -> dict[str, str]:
    """The files whose change is only to kernels that compile to the same machine code: ``{path:
    why}`` for each path where every listed kernel (``kernels``: those of :func:`diff_kernels`
    with their ``rows``, runner.kernels.table.rows) is ``changed`` with every row ``identical``
    and nothing of it guessed (a helper: every row of the kernels that call it), and the module
    outside its kernels is the same on both sides (``files[side][path]``, the text).

    Nothing guessed: a change inside ``if HAS_BIAS:`` compiles alike when ``HAS_BIAS`` is guessed
    False, and a cast compiles to nothing for the fp32 a pointer is guessed to hold; only the
    specialisations the program really launches (read, or captured) may skip a benchmark."""
    by_name: dict[str, list[dict]] = {}
    for k in kernels:
        by_name.setdefault(k["name"], []).append(k)

    def identical(k: dict) -> bool:
        if k["status"] != "changed":
            return False
        if k["helper_of"]:
            callers = [c for name in k["helper_of"] for c in by_name.get(name, [])]
            return bool(callers) and all(c is not k and identical(c) for c in callers)
        rows = k.get("rows") or []
        return bool(rows) and all(r["identical"] and not r["guessed"] for r in rows)

    out = {}
    for path in sorted({k["path"] for k in kernels}):
        here = [k for k in kernels if k["path"] == path]
        texts = [files[side].get(path) for side in SIDES]
        if None in texts or not all(identical(k) for k in here):
            continue
        try:
            if _outside_kernels(texts[0]) != _outside_kernels(texts[1]):
                continue
        except SyntaxError:
            continue
        names = ", ".join(k["name"] for k in here)
        out[path] = f"{names}: the same machine code on both sides, nothing else changed"
    return out

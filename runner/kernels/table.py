"""The compiler's answers in rows, base against head, and what got worse (pure).

A row is one kernel, one specialisation, one arch: each side's ``{registers, stack, local,
shared_static, shared_dynamic, instructions, local_stores, local_loads, sass_sha256, sha256,
threads, occupancy}`` (or ``{error, stage}``), ``identical`` (the same machine code and
resources: :data:`SAME`) and ``worse``: the reasons head
is worse — more registers per thread, a larger stack (spills), fewer blocks per SM, or a head that
no longer compiles. Only a ``worse`` row makes a finding (:func:`findings`) and a
``register_pressure`` hint (:func:`hints`): a kernel that got better or only changed is reported
and never hinted.

A row whose specialisation was partly guessed (runner.kernels.specs) compares what the compiler
makes of those guesses. Where base and head were guessed alike, the difference is the change's
at that guess, and its finding says so ("at a guessed specialisation ..."): it is not stated as
the real launch's. Where they were not (``unlike_guesses``: head gained a constexpr base lacks, a
parameter changed kind, or a value read on one side is guessed on the other), the difference may
be the guesses' own, so the row makes no finding: it says why (``withheld``) and keeps its
numbers.
"""

from __future__ import annotations

from ..hints.rule import make_hint
from .occupancy import ARCHS, WARP, occupancy

#: What two compiles share when they are the same machine code: the SASS and every resource
#: (the cubins' own hashes may differ by their line tables alone).
SAME = ("sass_sha256", "registers", "stack", "local", "shared_static", "shared_dynamic")

#: What an answer says of a kernel loaded from its file reduced to its Triton code
#: (runner.kernels.worker: its module did not import), kept in the row's side.
LOADED = ("loaded", "import_error")

#: Confidence of a hint read from the compiler's own numbers: the cause is certain, its share of
#: a timing change is not (occupancy is not speed); lower where only registers grew (no spill,
#: the same blocks per SM: often harmless).
CONFIDENCE, REGISTERS_ONLY_CONFIDENCE, GUESSED_FACTOR = 0.7, 0.4, 0.75


def side_row(answer: dict | None, spec: dict, arch: str) -> dict | None:
    """One side's numbers for one job's ``answer`` (:mod:`runner.kernels.worker`)."""
    if answer is None:
        return None
    loaded = {k: answer[k] for k in LOADED if k in answer}  # from its source: the import failed
    if not answer.get("ok"):
        return {"error": answer.get("error", ""), "stage": answer.get("stage", "compile"),
                **loaded}
    u, threads = answer["usage"], spec["num_warps"] * WARP
    # On sm_90 ptxas often writes the runtime's reserved 1 KB into the cubin (a section
    # .nv.shared.reserved.0, counted in cuobjdump's SHARED) while the calculator adds 1 KB per
    # block too: up to 1 KB a block may be counted twice (not checked on a GPU; it moves the
    # blocks per SM only where shared memory is the limit, within 1 KB)
    shared = u["shared_static"] + answer["shared_dynamic"]
    row = {**u, "shared_dynamic": answer["shared_dynamic"], **answer["sass"],
           "sha256": answer["sha256"], "threads": threads, "compile_s": answer.get("seconds"),
           **loaded}
    if arch in ARCHS:
        row["occupancy"] = occupancy(arch, u["registers"], threads, shared)
    return row


def _worse(base: dict | None, head: dict | None) -> list[str]:
    if not head or not base or "error" in base:
        return []
    if "error" in head:  # an import or a timeout says nothing of the kernel
        return ["does not compile"] if head.get("stage") == "compile" else []
    out = []
    if head["registers"] > base["registers"]:
        out.append("registers")
    if head["stack"] + head["local"] > base["stack"] + base["local"]:
        out.append("spills")
    ob, oh = base.get("occupancy"), head.get("occupancy")
    if ob and oh and oh["blocks"] < ob["blocks"]:
        out.append("occupancy")
    return out


def _guess(spec: dict, name: str) -> str:
    kind = spec["signature"].get(name)
    if kind is None:
        return "none"
    value = spec["constexprs"][name] if kind == "constexpr" else kind
    return f"{value}{' guessed' if name in spec['guessed'] else ''}"


def unlike_guesses(base: dict, head: dict) -> list[str]:
    """The parameters guessed on either side (``guessed`` of runner.kernels.specs) whose guess
    is not the same on the other: absent there, of another kind or value, or read from the launch
    there: ``["EPS_LOW (base fp32 guessed, head 1e-06 guessed)"]``; empty where every guess is
    shared."""
    out = []
    for name in dict.fromkeys([*base["guessed"], *head["guessed"]]):
        b, h = _guess(base, name), _guess(head, name)
        if b != h:
            out.append(f"{name} (base {b}, head {h})")
    return out


def withheld(unlike: list[str]) -> str | None:
    """Why a worse row makes no finding (:func:`unlike_guesses`), or None."""
    if not unlike:
        return None
    more = f" and {len(unlike) - 3} more" if len(unlike) > 3 else ""
    return ("not a finding: base and head were guessed differently, "
            f"{'; '.join(unlike[:3])}{more}: the difference may be the guesses'")


def likeness(base: dict, head: dict) -> int | None:
    """How alike two specialisations are: the argument types, constexpr values, ``num_warps``
    and ``num_stages`` they share; None where an argument both have is a tensor of another
    dtype on each side (``*fp32`` against ``*bf16``: two different launches, never compared)."""
    bs, hs = base["signature"], head["signature"]
    if any(bs[k] != hs[k] for k in bs.keys() & hs.keys()
           if bs[k].startswith("*") and hs[k].startswith("*")):
        return None
    same = sum(bs[k] == hs[k] for k in bs.keys() & hs.keys())
    bc, hc = base["constexprs"], head["constexprs"]
    same += sum(bc[k] == hc[k] for k in bc.keys() & hc.keys())
    return same + (base["num_warps"] == head["num_warps"]) + (
        base["num_stages"] == head["num_stages"])


def pairs(specs: dict[str, list[dict]]) -> list[dict[str, tuple[int, dict]]]:
    """Base's and head's specialisations paired (``{side: (index, spec)}``, a side missing where
    it has none): the same label first; then each base specialisation left with the most alike
    head one (:func:`likeness`: a launch site whose ``BLOCK`` changed is one launch, compiled two
    ways; base's one launch against the autotune config head tries with the same block size),
    never two of different dtypes; the rest alone. In the order base gave them."""
    base, head = (list(enumerate(specs.get(s, []))) for s in ("base", "head"))
    left = {id(h): h for h in head}
    out = []
    for b in base:
        twin = next((h for h in left.values() if h[1]["label"] == b[1]["label"]), None)
        if twin is not None:
            out.append({"base": b, "head": left.pop(id(twin))})
    paired_base = {id(p["base"]) for p in out}
    for b in (b for b in base if id(b) not in paired_base):
        scored = [(score, -h[0], h) for h in left.values()
                  if (score := likeness(b[1], h[1])) is not None]
        if scored:
            out.append({"base": b, "head": left.pop(id(max(scored)[2]))})
        else:
            out.append({"base": b})
    out.sort(key=lambda p: p["base"][0])
    return out + [{"head": h} for h in left.values()]


def rows(kernel: dict, archs: list[str], answers: dict[str, dict]) -> list[dict]:
    """The rows of one kernel of :func:`runner.kernels.plan.diff_kernels` (specialisations paired
    by :func:`pairs`; ``spec``: the label, ``base → head`` where they differ)."""
    out = []
    for by_side in pairs(kernel["specs"]):
        spec = (by_side.get("head") or by_side["base"])[1]
        labels = list(dict.fromkeys(s["label"] for _, s in by_side.values()))
        for arch in archs:
            sides = {}
            for side in ("base", "head"):
                if side in by_side:
                    i, s = by_side[side]
                    job = f"{side}|{kernel['path']}|{kernel['name']}|{i}|{arch}"
                    sides[side] = side_row(answers.get(job), s, arch)
                else:
                    sides[side] = None
            b, h = sides["base"], sides["head"]
            identical = bool(b and h and "error" not in b and "error" not in h
                             and all(b[f] == h[f] for f in SAME))
            unlike = (unlike_guesses(by_side["base"][1], by_side["head"][1])
                      if len(by_side) == 2 else [])
            worse = _worse(b, h)
            out.append({"spec": " → ".join(labels), "how": spec["how"],
                        "guessed": spec["guessed"], "arch": arch, "base": b, "head": h,
                        "identical": identical, "worse": worse, "unlike_guesses": unlike,
                        "withheld": withheld(unlike) if worse else None})
    return out


def _kb(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB"


def _spill(side: dict) -> str:
    stack = side["stack"] + side["local"]
    return f"spills {_kb(stack)}" if stack else "no spill"


def _blocks(side: dict) -> str:
    o = side["occupancy"]
    return f"{o['blocks']} block{'s' if o['blocks'] != 1 else ''} of {side['threads']} threads"


def sentence(name: str, row: dict) -> str:
    """The finding of one worse row, in words: "head's `k` uses 255 registers/thread and spills
    5.2 KB (base 168, no spill): occupancy 1 block of 256 threads per SM on sm_90 (base 2)"."""
    b, h = row["base"], row["head"]
    at = _at_guess(row.get("guessed") or [])
    if "error" in h:
        return (f"{at}head's `{name}` no longer compiles on {row['arch']} [{row['spec']}]: "
                f"{h['error'].strip().splitlines()[-1][:200]}{_from_source(row)}")
    text = (f"{at}head's `{name}` uses {h['registers']} registers/thread and {_spill(h)} "
            f"(base {b['registers']}, {_spill(b)})")
    if h.get("occupancy") and not h["occupancy"]["blocks"]:
        text += (f": it cannot launch on {row['arch']} ({h['occupancy']['limited_by']} beyond "
                 "what one SM gives a block)")
    elif h.get("occupancy") and b.get("occupancy"):
        text += (f": occupancy {_blocks(h)} per SM on {row['arch']} "
                 f"(base {b['occupancy']['blocks']}), limited by {h['occupancy']['limited_by']}")
    else:
        text += f" on {row['arch']}"
    return f"{text} [{row['spec']}]{_from_source(row)}"


def _at_guess(guessed: list[str]) -> str:
    """How a finding at a partly guessed specialisation opens: not a fact of the real launch."""
    if not guessed:
        return ""
    more = f" and {len(guessed) - 4} more" if len(guessed) > 4 else ""
    return (f"at a guessed specialisation ({', '.join(guessed[:4])}{more} guessed, alike on both "
            "sides; the real launch may compile otherwise), ")


def _from_source(row: dict) -> str:
    sides = [s for s in ("base", "head") if (row[s] or {}).get("loaded") == "source"]
    if not sides:
        return ""
    return (f" ({' and '.join(sides)} loaded from the kernel's source reduced to its Triton "
            f"code: its module did not import)")


def _severity(row: dict) -> tuple:
    b, h = row["base"], row["head"]
    if "error" in h:
        return (1, 0, 0)
    return (0, h["stack"] - b["stack"], h["registers"] - b["registers"])


def findings(kernels: list[dict]) -> list[dict]:
    """One finding per kernel whose head got worse: its worst row (a head that does not compile,
    then the most spill growth, then the most registers) as ``{kernel, path, arch, spec, worse,
    guessed, summary}``; a row ``withheld`` (base and head guessed differently) makes none."""
    out = []
    for k in kernels:
        worse = [r for r in k.get("rows", []) if r["worse"] and not r.get("withheld")]
        if worse:
            row = max(worse, key=_severity)
            out.append({"kernel": k["name"], "path": k["path"], "arch": row["arch"],
                        "spec": row["spec"], "worse": row["worse"], "guessed": row["guessed"],
                        "summary": sentence(k["name"], row)})
    return out


def hints(found: list[dict], paths: set[str] | None = None) -> list[dict]:
    """``register_pressure`` hints (:func:`runner.hints.rule.make_hint`) of the findings
    whose kernel lives in one of ``paths`` (all of them when None)."""
    return [make_hint("register_pressure", confidence(f),
                      f["summary"] + " (compiler, static)",
                      {k: f.get(k) for k in ("kernel", "path", "arch", "spec", "worse", "guessed")})
            for f in found if paths is None or f["path"] in paths]


def confidence(finding: dict) -> float:
    """:data:`CONFIDENCE`, :data:`REGISTERS_ONLY_CONFIDENCE` where only registers grew, and
    :data:`GUESSED_FACTOR` of it where the specialisation was partly guessed (the real launch
    may compile otherwise)."""
    base = REGISTERS_ONLY_CONFIDENCE if finding["worse"] == ["registers"] else CONFIDENCE
    return round(base * (GUESSED_FACTOR if finding.get("guessed") else 1.0), 2)


def _telling(row: dict) -> tuple:
    """How much a row says: a worse one first, then the most spill and register growth."""
    b, h = row["base"] if row["base"] and "error" not in row["base"] else None, row["head"]
    spill = h["stack"] + h["local"] - (b["stack"] + b["local"] if b else 0)
    return (bool(row["worse"]), spill, h["registers"] - (b["registers"] if b else 0))


def compiled_row(kernels: list[dict], name: str) -> dict | None:
    """The static pass's row of the kernel a trace names ``name`` (Triton names a kernel by its
    function: the ``name`` of a ``kernels`` entry) where head compiled, the one that says most
    (:func:`_telling`), with the kernel's ``path``; None where the pass has none."""
    name = name.split("(")[0].strip()
    rows = [dict(r, path=k["path"]) for k in kernels if k.get("name") == name
            for r in k.get("rows", []) if r.get("head") and "error" not in r["head"]]
    return max(rows, key=_telling) if rows else None


def _numbers(side: dict | None) -> dict | None:
    if not side or "error" in side:
        return None
    return {"registers": side["registers"], "spill_bytes": side["stack"] + side["local"],
            "blocks_per_sm": (side.get("occupancy") or {}).get("blocks")}


def join_compiler(hint: dict, kernels: list[dict]) -> str | None:
    """Give a trace's ``register_pressure`` hint (registers and occupancy seen together with the
    time: a correlation, :mod:`runner.hints.device`) the compiler's numbers for its
    kernel where the static pass has them: ``evidence.compiler``, a sentence, and
    :data:`CONFIDENCE` where the compiler finds head worse (a trace cannot show a spill; the
    compiler can). Returns the kernel's name when joined, else None."""
    ev = hint.get("evidence") or {}
    if hint.get("kind") != "register_pressure" or "compiler" in ev or not ev.get("kernel"):
        return None
    row = compiled_row(kernels, str(ev["kernel"]))
    if row is None:
        return None
    b, h = (row["base"] if row["base"] and "error" not in row["base"] else None), row["head"]
    ev["compiler"] = {"arch": row["arch"], "spec": row["spec"], "path": row["path"],
                      "base": _numbers(b), "head": _numbers(h), "worse": row["worse"]}
    base_words = f" (base {b['registers']}, {_spill(b)})" if b else ""
    hint["summary"] = (f"{hint['summary']} The compiler ({row['arch']} [{row['spec']}]): head "
                       f"{h['registers']} registers/thread and {_spill(h)}{base_words}.")
    if row["worse"]:
        hint["confidence"] = max(hint.get("confidence") or 0.0, CONFIDENCE)
    return str(ev["kernel"]).split("(")[0].strip()


def attach(entries: list[dict], section: dict, code_map: dict | None) -> None:
    """Join the compiler's numbers to each results.json benchmark entry's trace
    ``register_pressure`` hint whose kernel the static pass compiled (:func:`join_compiler`), and
    add the :func:`hints` of ``section``'s other findings to each entry whose code map
    (``code_map["benchmarks"][name]``, repository-relative paths) runs the kernel's file;
    without a map no entry gets those (the section's own findings say them)."""
    mapped = (code_map or {}).get("benchmarks") or {}
    kernels = section.get("kernels") or []
    for entry in entries:
        own = entry.get("hints") or []
        joined = {name for h in own if (name := join_compiler(h, kernels))}
        if joined:
            own.sort(key=lambda h: -(h.get("confidence") or 0.0))
        files = mapped.get(entry.get("name"))
        found = [h for h in (hints(section.get("findings") or [], set(files)) if files else [])
                 if h["evidence"].get("kernel") not in joined]
        if found:
            entry["hints"] = [*found, *own]

"""Outputs compared, base against head: the goals of issue 50, part 3, measured.

A benchmark, not a test: it prints the tables of evaluation/RESULTS_outputs.md and one summary
line (``--write FILE``: the same Markdown to a file); exit status 1 when a goal is missed. The
goals:

* 0 false "changes the result" over >= 200 benchmark pairs whose head computes the same thing:
  identical code, and reductions computed in another order — a 65,536-element float32 sum flipped,
  chunked, permuted or accumulated in float64, row sums chunked, a matmul split along K or run
  with another thread count, ``index_add_`` and ``scatter_add_`` with duplicate indices in another
  order, softmax, layer norm, variance, attention and convolution written another way — and
  nondeterministic bases (an ``index_add_`` or a loss whose accumulation order changes from call
  to call, as atomics do on a GPU);
* 100 % caught over seeded heads that skip work (half the rows, one row in 1024, the last 1 % of
  a reduction's terms, a stale cached output), compute in lower precision (float16 or bfloat16
  matmul, elementwise, softmax, layer norm, convolution), drop a term (a bias, a residual, a
  regulariser of weight 0.01) or change a dtype or shape.

How. Each case builds base's and head's zero-argument callables from inputs drawn with the case's
seed; each pair is then summarised by the worker's own code
(:func:`runner.worker.outputs.summarize`, after :func:`runner.worker.outputs.seed_all`, as
the ``output`` request does: base called twice, head once), the summaries sent through the
protocol's JSON check (:class:`runner.outputs.summary.OutputReply`) and compared by
:func:`runner.outputs.verdict.output_record` — the same code as a compare, without the timing around
it. The "limits" cases are what no output comparison can tell from a reordered reduction (a term of
relative weight 5e-6; float16 rounding of the terms of one scalar sum, which averages out); they are
measured and reported, not counted in the goals.

Usage::

    python evaluation/outputs.py                       # 16 seeds a same-case, 10 a changed one
    python evaluation/outputs.py --write tables.md     # the tables of RESULTS_outputs.md
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.outputs.summary import OUTPUT_SEED, SETUP_SEED, OutputReply  # noqa: E402
from runner.outputs.verdict import compare_pair, output_record  # noqa: E402
from runner.worker.outputs import seed_all, summarize  # noqa: E402

N = 65536


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _rand(seed: int, *shape) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed))


# -- heads that compute the same thing -------------------------------------------------------
def identical(seed):
    ops = [lambda x: x @ x.T, lambda x: torch.softmax(x, -1), lambda x: x.argmax(1),
           lambda x: (x > 0), lambda x: (x.sum(), x.shape[0], None),
           lambda x: {"y": x.relu(), "n": int(x.numel())}]
    x, op = _rand(seed, 64, 128), ops[seed % len(ops)]
    return (lambda: op(x)), (lambda: op(x))


def sum_flip(seed):
    x = _rand(seed, N)
    return (lambda: x.sum()), (lambda: x.flip(0).sum())


def sum_chunked(seed):
    x = _rand(seed, N)
    return (lambda: x.sum()), (lambda: x.view(256, 256).sum(1).sum())


def sum_permuted(seed):
    x, perm = _rand(seed, N), torch.randperm(N, generator=_g(seed + 1))
    return (lambda: x.sum()), (lambda: x[perm].sum())


def sum_float64(seed):
    x = _rand(seed, N)
    return (lambda: x.sum()), (lambda: x.double().sum().float())


def rowsum_chunked(seed):
    x = _rand(seed, 512, 4096)
    return (lambda: x.sum(1)), (lambda: x.view(512, 16, 256).sum(2).sum(1))


def rowsum_sequential_chunks(seed):
    """Split-K: 256 partial sums added one after another in float32, as a chunked kernel does."""
    x = _rand(seed, 64, 65536)

    def head():
        acc = torch.zeros(64)
        for j in range(256):
            acc += x[:, j * 256:(j + 1) * 256].sum(1)
        return acc
    return (lambda: x.sum(1)), head


def matmul_ksplit(seed):
    a, b = _rand(seed, 256, 1024), _rand(seed + 1, 1024, 256)
    return (lambda: a @ b), (lambda: a[:, :512] @ b[:512] + a[:, 512:] @ b[512:])


def matmul_threads(seed):
    a, b = _rand(seed, 384, 768), _rand(seed + 1, 768, 384)

    def with_threads(n):
        def call():
            before = torch.get_num_threads()
            torch.set_num_threads(n)
            try:
                return a @ b
            finally:
                torch.set_num_threads(before)
        return call
    return with_threads(1), with_threads(2)


def _dupes(seed):
    idx = torch.randint(0, 64, (20000,), generator=_g(seed))
    return idx, _rand(seed + 1, 20000, 32), torch.randperm(20000, generator=_g(seed + 2))


def index_add(seed):
    idx, src, perm = _dupes(seed)
    return ((lambda: torch.zeros(64, 32).index_add_(0, idx, src)),
            (lambda: torch.zeros(64, 32).index_add_(0, idx[perm], src[perm])))


def scatter_add(seed):
    idx, src, perm = _dupes(seed)
    full = idx[:, None].expand(-1, 32)
    return ((lambda: torch.zeros(64, 32).scatter_add_(0, full, src)),
            (lambda: torch.zeros(64, 32).scatter_add_(0, full[perm], src[perm])))


def index_add_nondeterministic(seed):
    """An order that changes from call to call (what atomics do), on base and head alike: the
    permutation comes from the operating system, which no seed reaches."""
    idx, src, _ = _dupes(seed)
    entropy = random.SystemRandom()

    def call():
        perm = torch.tensor(entropy.sample(range(20000), 20000))
        return torch.zeros(64, 32).index_add_(0, idx[perm], src[perm])
    return call, call


def loss_nondeterministic(seed):
    pred, target = _rand(seed, 64, 1024), _rand(seed + 1, 64, 1024)
    entropy = random.SystemRandom()

    def call():
        rows = entropy.sample(range(64), 64)
        return sum(((pred[i] - target[i]) ** 2).sum() for i in rows) / pred.numel()
    return call, (lambda: F.mse_loss(pred, target))


def softmax_manual(seed):
    x = _rand(seed, 128, 512) * 3
    return (lambda: torch.softmax(x, -1)), (
        lambda: (x - x.max(-1, keepdim=True).values).exp()
        / (x - x.max(-1, keepdim=True).values).exp().sum(-1, keepdim=True))


def layernorm_manual(seed):
    x, w, b = _rand(seed, 256, 768), _rand(seed + 1, 768), _rand(seed + 2, 768)

    def manual():
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * w + b
    return (lambda: F.layer_norm(x, (768,), w, b)), manual


def variance_manual(seed):
    x = _rand(seed, 64, 4096) + 10
    return (lambda: x.var(1)), (lambda: ((x - x.mean(1, keepdim=True)) ** 2).sum(1) / 4095)


def attention_einsum(seed):
    q, k, v = (_rand(seed + i, 4, 128, 64) for i in range(3))
    return ((lambda: torch.softmax(q @ k.transpose(1, 2) / 8, -1) @ v),
            (lambda: torch.einsum("bqk,bkd->bqd",
                                  torch.softmax(torch.einsum("bqd,bkd->bqk", q, k) / 8, -1), v)))


def conv_im2col(seed):
    x, w = _rand(seed, 2, 16, 32, 32), _rand(seed + 1, 32, 16, 3, 3)

    def im2col():
        cols = F.unfold(x, 3, padding=1)  # (2, 144, 1024)
        return (w.view(32, -1) @ cols).view(2, 32, 32, 32)
    return (lambda: F.conv2d(x, w, padding=1)), im2col


def bf16_work_float32_output(seed):
    """Autocast-style: bfloat16 work, a float32 output; head splits K (its sums round in
    bfloat16 elsewhere)."""
    a, b = _rand(seed, 128, 512).bfloat16(), _rand(seed + 1, 512, 128).bfloat16()
    return ((lambda: (a @ b).float()),
            (lambda: (a[:, :256] @ b[:256] + a[:, 256:] @ b[256:]).float()))


def float64_of_float32_sum(seed):
    x = _rand(seed, N)
    return (lambda: x.sum().double()), (lambda: x.flip(0).sum().double())


SAME = [identical, sum_flip, sum_chunked, sum_permuted, sum_float64, rowsum_chunked,
        rowsum_sequential_chunks, matmul_ksplit, matmul_threads, index_add, scatter_add,
        index_add_nondeterministic, loss_nondeterministic, softmax_manual, layernorm_manual,
        variance_manual, attention_einsum, conv_im2col, bf16_work_float32_output,
        float64_of_float32_sum]


# -- heads that change the result ------------------------------------------------------------
def _mm(seed):
    return _rand(seed, 256, 512), _rand(seed + 1, 512, 256), _rand(seed + 2, 256)


def skip_half_rows(seed):
    a, b, _ = _mm(seed)

    def head():
        out = torch.zeros(256, 256)
        out[:128] = a[:128] @ b
        return out
    return (lambda: a @ b), head


def skip_one_row_in_1024(seed):
    x, w = _rand(seed, 1024, 256), _rand(seed + 1, 256, 256)

    def head():
        out = torch.empty(1024, 256)
        out[:1023] = x[:1023] @ w
        out[1023] = 0
        return out
    return (lambda: x @ w), head


def skip_reduction_tail(seed):
    x = _rand(seed, 512, 4096).abs()
    return (lambda: x.sum(1)), (lambda: x[:, :4055].sum(1))  # the last 1 % of the terms


def stale_cached_output(seed):
    """Head returns what it computed for an earlier input (the inputs are drawn inside the call:
    a cache keyed on the wrong thing)."""
    w = _rand(seed, 256, 256)
    cache = {}

    def base():
        return torch.randn(64, 256) @ w

    def head():
        if "out" not in cache:
            cache["out"] = torch.randn(64, 256) @ w
            torch.randn(64, 256)
        return cache["out"]
    seed_all(SETUP_SEED)  # filled by the set-up's first call, as in a compare's worker
    head()
    return base, head


def fp16_matmul(seed):
    a, b, _ = _mm(seed)
    return (lambda: a @ b), (lambda: (a.half() @ b.half()).float())


def bf16_matmul(seed):
    a, b, _ = _mm(seed)
    return (lambda: a @ b), (lambda: (a.bfloat16() @ b.bfloat16()).float())


def fp16_elementwise(seed):
    x = _rand(seed, 512, 512)
    return (lambda: F.gelu(x)), (lambda: F.gelu(x.half()).float())


def bf16_softmax(seed):
    x = _rand(seed, 128, 1024) * 2
    return (lambda: torch.softmax(x, -1)), (lambda: torch.softmax(x.bfloat16(), -1).float())


def fp16_layernorm(seed):
    x = _rand(seed, 256, 768)
    return (lambda: F.layer_norm(x, (768,))), (lambda: F.layer_norm(x.half(), (768,)).float())


def bf16_conv(seed):
    x, w = _rand(seed, 2, 16, 32, 32), _rand(seed + 1, 32, 16, 3, 3)
    return ((lambda: F.conv2d(x, w, padding=1)),
            (lambda: F.conv2d(x.bfloat16(), w.bfloat16(), padding=1).float()))


def drop_bias(seed):
    a, b, c = _mm(seed)
    return (lambda: a @ b + c), (lambda: a @ b)


def drop_residual(seed):
    x, w = _rand(seed, 256, 256), _rand(seed + 1, 256, 256) / 16
    return (lambda: x + torch.relu(x @ w)), (lambda: torch.relu(x @ w))


def drop_regulariser(seed):
    pred, target, w = _rand(seed, 64, 1024), _rand(seed + 1, 64, 1024), _rand(seed + 2, 1024)
    return ((lambda: F.mse_loss(pred, target) + 0.01 * (w ** 2).mean()),
            (lambda: F.mse_loss(pred, target)))


def bf16_work_drop_bias(seed):
    a, b = _rand(seed, 128, 512).bfloat16(), _rand(seed + 1, 512, 128).bfloat16()
    c = _rand(seed + 2, 128).bfloat16()
    return (lambda: (a @ b + c).float()), (lambda: (a @ b).float())


def dtype_half(seed):
    x = _rand(seed, 128, 128)
    return (lambda: x @ x), (lambda: (x @ x).half())


def dtype_double(seed):
    x = _rand(seed, 4096)
    return (lambda: x.cumsum(0)), (lambda: x.double().cumsum(0))


def dtype_int32(seed):
    x = _rand(seed, 512, 64)
    return (lambda: x.argmax(1)), (lambda: x.argmax(1).int())


def dtype_bool_uint8(seed):
    x = _rand(seed, 10000)
    return (lambda: x > 0), (lambda: (x > 0).to(torch.uint8))


def shape_keepdim(seed):
    x = _rand(seed, 64, 256)
    return (lambda: x.sum(1)), (lambda: x.sum(1, keepdim=True))


def shape_transposed(seed):
    a, b = _rand(seed, 128, 128), _rand(seed + 1, 128, 128)
    return (lambda: a @ b), (lambda: (a @ b).T.contiguous())


CHANGED = {"skip work": [skip_half_rows, skip_one_row_in_1024, skip_reduction_tail,
                         stale_cached_output],
           "lower precision": [fp16_matmul, bf16_matmul, fp16_elementwise, bf16_softmax,
                               fp16_layernorm, bf16_conv],
           "drop a term": [drop_bias, drop_residual, drop_regulariser, bf16_work_drop_bias],
           "dtype or shape": [dtype_half, dtype_double, dtype_int32, dtype_bool_uint8,
                              shape_keepdim, shape_transposed]}


# -- what no output comparison can tell from reordering (reported, not counted) ----------------
def limit_drop_layernorm_eps(seed):
    x = _rand(seed, 256, 768)
    return ((lambda: F.layer_norm(x, (768,), eps=1e-5)),
            (lambda: F.layer_norm(x, (768,), eps=0.0)))


def limit_fp16_terms_of_one_sum(seed):
    x = _rand(seed, N)
    return (lambda: x.sum()), (lambda: x.half().float().sum())


LIMITS = [limit_drop_layernorm_eps, limit_fp16_terms_of_one_sum]


#: A 65,536-element float32 sum in other orders (the issue's example), over 200 seeds.
SUM_ORDERS = {
    "flipped": lambda x: x.flip(0).sum(), "256 chunks": lambda x: x.view(256, 256).sum(1).sum(),
    "16 chunks": lambda x: x.view(16, 4096).sum(0).sum(),
    "permuted": lambda x: x[torch.randperm(N, generator=_g(1))].sum(),
    "float64 accumulator": lambda x: x.double().sum().float(),
    "numpy pairwise": lambda x: torch.tensor(x.numpy().sum(dtype="float32")),
    "sequential 256 partials": lambda x: _sequential(x.view(256, 256).sum(1))}


def _sequential(parts: torch.Tensor) -> torch.Tensor:
    acc = torch.zeros((), dtype=parts.dtype)
    for p in parts:
        acc = acc + p
    return acc


def sum_orders_study(seeds: int = 200) -> list[dict]:
    """Per order: how many of ``seeds`` sums torch.testing's defaults flag, and perfgate."""
    rows = []
    for name, other in SUM_ORDERS.items():
        flagged = changed = 0
        worst_abs = worst_rel = 0.0
        for seed in range(seeds):
            x = _rand(seed, N)
            base, head = x.sum(), other(x)
            try:
                torch.testing.assert_close(head, base)
            except AssertionError:
                flagged += 1
            record = output_record([([summarize(base), summarize(base)], [summarize(head)])])
            changed += record["verdict"] == "changed"
            worst_abs, worst_rel = (max(worst_abs, record["max_abs_diff"] or 0.0),
                                    max(worst_rel, record["max_rel_diff"] or 0.0))
        rows.append({"order": name, "seeds": seeds, "torch_testing_flags": flagged,
                     "perfgate_changed": changed, "max_abs_diff": worst_abs,
                     "max_rel_diff": worst_rel})
    return rows


def compare(case, seed: int) -> tuple[dict, bool, float]:
    """One pair as a compare's ``output`` requests make it: ``(the record, whether head's first
    output differs from base's in any byte, the largest norm-wise error over its tolerance)``."""
    base_fn, head_fn = case(seed)
    seed_all(OUTPUT_SEED)
    base = [summarize(base_fn())]
    seed_all(OUTPUT_SEED)
    base.append(summarize(base_fn()))
    seed_all(OUTPUT_SEED)
    head = [summarize(head_fn())]
    base, head = _over_the_pipe(base), _over_the_pipe(head)
    differs = any(_bytes_of(base[0], key) != _bytes_of(head[0], key) for key in ("hash", "values"))
    margin = max((d.err / d.tol for d in compare_pair(base, head).diffs if d.tol), default=0.0)
    return output_record([(base, head)]), differs, margin


def _over_the_pipe(summaries: list[dict]) -> list[dict]:
    """The summaries as the parent reads them: JSON, checked by the protocol."""
    sent = json.loads(json.dumps(OutputReply(tuple(summaries)).to_json()))
    return list(OutputReply.from_json(sent).summaries)


def _bytes_of(summary: dict, key: str) -> list:
    return [leaf.get(key) for leaf in summary["leaves"]]


def run(same_seeds: int, changed_seeds: int) -> dict:
    rows, t0 = [], time.perf_counter()
    groups = [("same", case, same_seeds) for case in SAME]
    groups += [(kind, case, changed_seeds) for kind, cases in CHANGED.items() for case in cases]
    groups += [("limit", case, changed_seeds) for case in LIMITS]
    for group, case, seeds in groups:
        verdicts, differing, spreads, worst, margins = {}, 0, [], 0.0, []
        for seed in range(seeds):
            record, differs, margin = compare(case, 1000 * seed + 17)
            margins.append(margin)
            verdicts[record["verdict"]] = verdicts.get(record["verdict"], 0) + 1
            differing += differs
            if record["nondeterminism"]:
                spreads.append(record["nondeterminism"]["spread"])
            if record["max_rel_diff"] is not None:
                worst = max(worst, record["max_rel_diff"])
        rows.append({"group": group, "case": case.__name__, "pairs": seeds, "verdicts": verdicts,
                     "bytes_differ": differing, "max_spread": max(spreads, default=0.0),
                     "max_rel_diff": worst, "err_over_tol": (min(margins), max(margins))})
    sums = sum_orders_study()
    return {"rows": rows, "sums": sums, "seconds": time.perf_counter() - t0}


def summary(result: dict) -> dict:
    same = [r for r in result["rows"] if r["group"] == "same"]
    changed = [r for r in result["rows"] if r["group"] not in ("same", "limit")]
    return {"same_pairs": sum(r["pairs"] for r in same),
            "same_bytes_differ": sum(r["bytes_differ"] for r in same),
            "false_changed": sum(r["verdicts"].get("changed", 0) for r in same),
            "same_not_compared": sum(r["verdicts"].get("not_compared", 0) for r in same),
            "changed_pairs": sum(r["pairs"] for r in changed),
            "caught": sum(r["verdicts"].get("changed", 0) for r in changed),
            "seconds": result["seconds"]}


def markdown(result: dict) -> str:
    s = summary(result)
    lines = ["| group | case | pairs | bytes differ | same | changed | not compared | "
             "max spread (base vs base) | max rel diff | error / tolerance |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        v = r["verdicts"]
        lines.append(f"| {r['group']} | `{r['case']}` | {r['pairs']} | {r['bytes_differ']} | "
                     f"{v.get('same', 0)} | {v.get('changed', 0)} | {v.get('not_compared', 0)} | "
                     f"{r['max_spread']:.2g} | {r['max_rel_diff']:.2g} | "
                     f"{r['err_over_tol'][0]:.2g}–{r['err_over_tol'][1]:.2g} |")
    lines += ["", "| a 65,536-element float32 sum | seeds | torch.testing flags "
              "| perfgate: changed | max abs diff | max rel diff |",
              "|---|---:|---:|---:|---:|---:|"]
    for r in result["sums"]:
        lines.append(f"| {r['order']} | {r['seeds']} | {r['torch_testing_flags']} | "
                     f"{r['perfgate_changed']} | {r['max_abs_diff']:.2g} | "
                     f"{r['max_rel_diff']:.2g} |")
    lines.append("")
    lines.append(f"Same computation: {s['false_changed']} of {s['same_pairs']} pairs called "
                 f"changed ({s['same_bytes_differ']} of them differ in some byte; "
                 f"{s['same_not_compared']} not compared). Changed computation: "
                 f"{s['caught']} of {s['changed_pairs']} caught. "
                 f"{s['seconds']:.1f} s in all.")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--same-seeds", type=int, default=16)
    parser.add_argument("--changed-seeds", type=int, default=10)
    parser.add_argument("--write", help="write the table (Markdown) to this file")
    parser.add_argument("--smoke", action="store_true", help="one seed of each (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.same_seeds, args.changed_seeds = 1, 1
    torch.set_num_threads(2)
    result = run(args.same_seeds, args.changed_seeds)
    text = markdown(result)
    print(text)
    if args.write:
        Path(args.write).write_text(text + "\n")
    s = summary(result)
    sums_changed = sum(r["perfgate_changed"] for r in result["sums"])
    return 0 if s["false_changed"] == sums_changed == 0 and s["caught"] == s["changed_pairs"] else 1


if __name__ == "__main__":
    sys.exit(main())

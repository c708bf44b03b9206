"""Kernels read from source (runner.kernels.find, .specs, .plan), no Triton needed."""

from __future__ import annotations

import ast
import textwrap

from runner.kernels.find import kernels_in, launch_sites, triton_only
from runner.kernels.plan import diff_kernels, module_name, read_side
from runner.kernels.specs import compared_values, specs_for

SOURCE = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl

    SCALE = 2.0
    CONFIGS = [triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2),
               triton.Config({"BLOCK": 256}, num_warps=8)]


    @triton.jit
    def _square(x):
        return x * x * SCALE


    @triton.autotune(configs=CONFIGS, key=["n"])
    @triton.jit
    def tuned(X, out_ptr, n, eps, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, _square(tl.load(X + offs)) + eps)


    @triton.jit
    def plain(x_ptr, n, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr, ROWS: tl.constexpr = 4):
        pass


    def launch(n):
        x = torch.empty(n, dtype=torch.float16, device="cuda")
        plain[(1,)](x, 7, BLOCK=512, HAS_BIAS=True, num_warps=2)
''')


def test_kernels_configs_and_what_they_read():
    found = {k.name: k for k in kernels_in(SOURCE, "lib/ops.py")}
    assert set(found) == {"_square", "tuned", "plain"}
    tuned = found["tuned"]
    assert tuned.configs == [{"kwargs": {"BLOCK": 128}, "num_warps": 4, "num_stages": 2},
                             {"kwargs": {"BLOCK": 256}, "num_warps": 8, "num_stages": None}]
    assert "CONFIGS" in tuned.uses and tuned.calls == ["_square"]
    assert found["plain"].params[-1] == ("ROWS", True, 4)


def test_specs_from_configs_sites_and_defaults():
    found = {k.name: k for k in kernels_in(SOURCE, "lib/ops.py")}
    sites = launch_sites(SOURCE, "lib/ops.py")
    assert [s["kernel"] for s in sites] == ["plain"]
    tuned = specs_for(found["tuned"], [])
    assert [(s["constexprs"], s["num_warps"], s["num_stages"], s["how"]) for s in tuned] == [
        ({"BLOCK": 128}, 4, 2, "autotune config"), ({"BLOCK": 256}, 8, 3, "autotune config")]
    assert tuned[0]["signature"] == {"X": "*fp32", "out_ptr": "*fp32", "n": "i32", "eps": "fp32",
                                     "BLOCK": "constexpr"}
    assert tuned[0]["aligned"] == [0, 1]
    (plain,) = specs_for(found["plain"], sites)
    assert plain["how"] == "launch site"
    assert plain["signature"]["x_ptr"] == "*fp16" and plain["signature"]["n"] == "i32"
    assert plain["constexprs"] == {"BLOCK": 512, "HAS_BIAS": True, "ROWS": 4}
    assert plain["num_warps"] == 2 and plain["guessed"] == []
    (default,) = specs_for(found["plain"], [])
    assert default["how"] == "default" and default["constexprs"] == {
        "BLOCK": 64, "HAS_BIAS": False, "ROWS": 4}
    assert default["guessed"] == ["x_ptr", "n", "BLOCK", "HAS_BIAS"]


ENUMS = textwrap.dedent('''
    import triton
    import triton.language as tl

    _MODE_A: tl.constexpr = tl.constexpr(3)
    _MODE_B: tl.constexpr = tl.constexpr(5)


    @triton.jit
    def loss(x_ptr, out_ptr, n, LOSS_TYPE: tl.constexpr, mode: tl.constexpr,
             reduction: tl.constexpr, KIND: tl.constexpr, BLOCK: tl.constexpr,
             HAS_W: tl.constexpr, ORDER: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        if LOSS_TYPE == 0:
            y = x * 2
        elif 1 == LOSS_TYPE:
            y = x * 3
        elif LOSS_TYPE == 2:
            y = x * 4
        if LOSS_TYPE != 3:
            y = y + 1
        if mode != _MODE_B:
            y = y * 5
        if reduction == "mean":
            y = y / n
        if KIND in (7, 8):
            y = _helper(y, KIND)
        if BLOCK == 1:
            y = y - 1
        if HAS_W:
            y = y * 2
        if ORDER == 2 and ORDER > 0:
            y = y + 2
        tl.store(out_ptr + offs, y, mask=offs < n)
''')


def test_a_constexpr_the_kernel_only_compares_is_guessed_one_of_its_compared_values():
    (kernel,) = kernels_in(ENUMS, "k.py")
    assert compared_values(kernel) == {"LOSS_TYPE": [0, 1, 2, 3], "mode": [5],
                                       "reduction": ["mean"], "KIND": [7, 8]}
    (spec,) = specs_for(kernel, [])
    assert spec["constexprs"] == {"LOSS_TYPE": 0, "mode": 5, "reduction": "mean", "KIND": 7,
                                  "BLOCK": 64, "HAS_W": False, "ORDER": 64}
    assert {"LOSS_TYPE", "mode", "reduction", "KIND", "BLOCK", "ORDER"} <= set(spec["guessed"])
    # a value the launch gives wins over the guess
    site = {"kernel": "loss", "path": "k.py", "line": 1, "text": "", "args": [],
            "kwargs": {"LOSS_TYPE": ("value", 2)}}
    (launched,) = specs_for(kernel, [site])
    assert launched["constexprs"]["LOSS_TYPE"] == 2 and "LOSS_TYPE" not in launched["guessed"]


def test_a_file_reduced_to_its_triton_code_keeps_its_line_numbers():
    text = textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl
        from unsloth_zoo import gpu_only
        from triton.language.extra import libdevice

        SIZE = gpu_only()
        LOG2_E: tl.constexpr = tl.constexpr(1.4426950408889634)


        def helper(x):
            return x


        @triton.autotune(configs=[triton.Config({"BLOCK": 128})],
                         key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            tl.store(x_ptr, tl.load(x_ptr) * LOG2_E)


        class Layer(torch.nn.Module):
            pass
    ''')
    reduced = triton_only(text)
    kept = [i for i, line in enumerate(reduced.splitlines(), 1) if line]
    assert len(reduced.splitlines()) == len(text.splitlines())
    assert [text.splitlines()[i - 1] for i in kept] == [
        "import triton", "import triton.language as tl",
        "from triton.language.extra import libdevice",
        "LOG2_E: tl.constexpr = tl.constexpr(1.4426950408889634)",
        '@triton.autotune(configs=[triton.Config({"BLOCK": 128})],', '                 key=["n"])',
        "@triton.jit", "def k(x_ptr, n, BLOCK: tl.constexpr):",
        "    tl.store(x_ptr, tl.load(x_ptr) * LOG2_E)"]
    (kernel,) = kernels_in(reduced, "k.py")
    assert kernel.line == text.splitlines().index("def k(x_ptr, n, BLOCK: tl.constexpr):") + 1


def test_a_finding_says_a_side_came_from_its_reduced_source():
    from runner.kernels.table import findings
    side = {"registers": 40, "stack": 0, "local": 0, "threads": 128}
    row = {"arch": "sm_90", "spec": "BLOCK=64", "guessed": [], "worse": ["registers"],
           "base": {**side, "loaded": "source", "import_error": "ImportError: no GPU"},
           "head": {**side, "registers": 48, "loaded": "source",
                    "import_error": "ImportError: no GPU"}}
    (found,) = findings([{"name": "k", "path": "k.py", "rows": [row]}])
    assert found["summary"] == (
        "head's `k` uses 48 registers/thread and no spill (base 40, no spill) on sm_90 "
        "[BLOCK=64] (base and head loaded from the kernel's source reduced to its Triton code: "
        "its module did not import)")


def _diff(base: str, head: str) -> dict:
    kernels = diff_kernels(read_side({"lib/ops.py": base}), read_side({"lib/ops.py": head}))
    return {k["name"]: k for k in kernels}


def test_a_helper_change_changes_its_callers_and_nothing_else():
    d = _diff(SOURCE, SOURCE.replace("x * x * SCALE", "x * SCALE * x"))
    assert {n: k["status"] for n, k in d.items()} == {
        "_square": "changed", "tuned": "changed", "plain": "unchanged"}
    assert d["_square"]["helper_of"] == ["tuned"] and d["_square"]["specs"] == {}
    assert d["tuned"]["why"] == ["source"]


def test_a_constant_a_config_or_a_launch_change_is_a_change():
    d = _diff(SOURCE, SOURCE.replace("SCALE = 2.0", "SCALE = 3.0"))
    assert d["tuned"]["status"] == "changed"
    d = _diff(SOURCE, SOURCE.replace("num_warps=8", "num_warps=4"))
    assert d["tuned"]["why"] == ["source", "specialisations"]
    d = _diff(SOURCE, SOURCE.replace("BLOCK=512", "BLOCK=1024"))
    assert d["plain"]["why"] == ["specialisations", "launch site"]
    assert d["tuned"]["status"] == "unchanged"
    d = _diff(SOURCE, SOURCE.replace("def plain", "def plain2").replace("plain[", "plain2["))
    assert (d["plain"]["status"], d["plain2"]["status"]) == ("removed", "added")


def test_comments_and_other_functions_change_no_kernel():
    head = SOURCE.replace("def launch(n):", "def launch(n):  # a comment\n    n = n + 0")
    assert {k["status"] for k in _diff(SOURCE, "# header\n" + head).values()} == {"unchanged"}


def test_module_names():
    packages = {"src/pkg", "src/pkg/ops", "tools"}
    assert module_name("src/pkg/ops/k.py", packages) == ("pkg.ops.k", "src")
    assert module_name("src/pkg/__init__.py", packages) == ("pkg", "src")
    assert module_name("tools/k.py", packages) == ("tools.k", "")
    assert module_name("scripts/k.py", packages) == (None, "")


def test_findings_become_hints_of_the_benchmarks_that_run_the_kernel():
    from runner.kernels.table import attach

    finding = {"kernel": "k", "path": "lib/ops.py", "arch": "sm_90", "spec": "BLOCK=64",
               "worse": ["spills"], "summary": "head's `k` uses 255 registers/thread"}
    entries = [{"name": "runs_it", "hints": [{"kind": "kernel_time"}]}, {"name": "does_not"},
               {"name": "unmapped"}]
    code_map = {"benchmarks": {"runs_it": ["lib/ops.py", "b.py"], "does_not": ["b.py"]}}
    attach(entries, {"findings": [finding]}, code_map)
    assert [h["kind"] for h in entries[0]["hints"]] == ["register_pressure", "kernel_time"]
    assert entries[0]["hints"][0]["summary"].endswith("(compiler, static)")
    assert "hints" not in entries[1] and "hints" not in entries[2]
    attach(entries[1:], {"findings": [finding]}, None)
    assert "hints" not in entries[1]


def test_the_report_says_the_findings_and_a_pass_not_run():
    from runner import report, results
    from tests.runner.test_report import _doc

    finding = {"kernel": "k", "path": "lib/ops.py",
               "summary": "head's `k` uses 255 registers/thread"}
    doc = _doc([])
    doc["kernels"] = {"ran": True, "archs": ["sm_80", "sm_90"], "unchanged": 3,
                      "findings": [finding],
                      "kernels": [{"path": "lib/ops.py", "name": "k", "status": "changed",
                                   "changed": True, "rows": []}]}
    results.validate(doc)
    md = report.render(doc, "md")
    assert "1 Triton kernel(s) changed, compiled for sm_80, sm_90 on both sides" in md
    assert "uses 255 registers/thread" in md
    doc["kernels"] = {"ran": False, "why_not": "Triton is not installed", "archs": [],
                      "kernels": [], "findings": []}
    assert "Static analysis not run: Triton is not installed." in report.render(doc, "md")


def test_launch_literals_specialise_as_triton_does():
    """Triton's ``specialize_impl``: an int of 1 is a constexpr, one divisible by 16 is aligned
    (``tt.divisibility``), a bool is ``u1``."""
    text = textwrap.dedent('''
        @triton.jit
        def k(a_ptr, n, stride, flag, BLOCK: tl.constexpr):
            pass

        def go(a):
            k[(1,)](a, 512, 1, True, BLOCK=32)
    ''')
    (kernel,) = kernels_in(text, "k.py")
    (spec,) = specs_for(kernel, launch_sites(text, "k.py"))
    assert spec["signature"] == {"a_ptr": "*fp32", "n": "i32", "stride": "constexpr",
                                 "flag": "u1", "BLOCK": "constexpr"}
    assert spec["constexprs"] == {"stride": 1, "BLOCK": 32} and spec["aligned"] == [0, 1]


def _row(identical: bool, guessed: tuple = ()) -> dict:
    return {"identical": identical, "guessed": list(guessed)}


def test_same_machine_code_only_where_every_kernel_compiles_alike_and_nothing_else_changed():
    from runner.kernels.plan import same_machine_code

    head = SOURCE.replace("x * x * SCALE", "(x * x) * SCALE")
    kernels = [{"path": "lib/ops.py", "name": "_square", "status": "changed",
                "helper_of": ["tuned"], "rows": []},
               {"path": "lib/ops.py", "name": "tuned", "status": "changed", "helper_of": [],
                "rows": [_row(True), _row(True)]}]
    files = {"base": {"lib/ops.py": SOURCE}, "head": {"lib/ops.py": head}}
    assert list(same_machine_code(kernels, files)) == ["lib/ops.py"]
    kernels[1]["rows"][1] = _row(False)  # one arch or config compiled differently
    assert same_machine_code(kernels, files) == {}
    kernels[1]["rows"][1] = _row(True, ["HAS_BIAS"])  # alike, but under a guess
    assert same_machine_code(kernels, files) == {}
    kernels[1]["rows"][1] = _row(True)
    files["head"]["lib/ops.py"] = head.replace("x = torch.empty(n,", "x = torch.zeros(n,")
    assert same_machine_code(kernels, files) == {}  # the code around the kernels changed too


def test_selection_skips_a_benchmark_whose_changed_files_compile_alike():
    from runner import selection

    code_map = {"benchmarks": {"a": ["lib/ops.py", "b/bench_a.py"],
                               "b": ["lib/ops.py", "lib/other.py", "b/bench_b.py"]}}
    plan = selection.select([("a", "b/bench_a.py"), ("b", "b/bench_b.py")],
                            ["lib/ops.py", "lib/other.py"], code_map, selection.Rules(),
                            bench_dir="b", same_code={"lib/ops.py": "tuned: the same machine code"})
    assert [(c.name, c.run, c.reason, c.detail) for c in plan.choices] == [
        ("a", False, selection.SAME_MACHINE_CODE, "lib/ops.py"),
        ("b", True, selection.CHANGED, "lib/other.py")]


def test_a_captured_compile_becomes_a_launch_specialisation():
    """The hook's ``compile`` argument as Triton 3.9 gives it (read from a real capture)."""
    from runner.kernels.capture import record
    from runner.kernels.specs import from_capture

    compile_kwargs = {
        "name": "plain", "num_warps": 8, "num_stages": 3,
        "signature": {"x_ptr": "*fp16", "n": "i32", "BLOCK": "constexpr",
                      "HAS_BIAS": "constexpr", "ROWS": "constexpr"},
        "constants": {(2,): 1024, (3,): True, (4,): 4},
        "configs": [{(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]],
                     (2,): []}]}
    names = ["x_ptr", "n", "BLOCK", "HAS_BIAS", "ROWS"]
    r = record(compile_kwargs, names, "/repo/lib/ops.py")
    assert r == {"file": "/repo/lib/ops.py", "kernel": "plain",
                 "signature": compile_kwargs["signature"],
                 "constexprs": {"BLOCK": 1024, "HAS_BIAS": True, "ROWS": 4},
                 "num_warps": 8, "num_stages": 3, "aligned": [0, 1]}
    (kernel,) = [k for k in kernels_in(SOURCE, "lib/ops.py") if k.name == "plain"]
    (spec,) = from_capture(kernel, [r, dict(r)])  # the same launch twice: one specialisation
    assert (spec["how"], spec["label"]) == ("launch", "BLOCK=1024 HAS_BIAS=True ROWS=4 "
                                                      "num_warps=8 num_stages=3 *fp16")
    base = read_side({"lib/ops.py": SOURCE})
    head = read_side({"lib/ops.py": SOURCE})
    d = {k["name"]: k for k in diff_kernels(base, head, {"head": {("lib/ops.py", "plain"): [r]}})}
    # launched on head alone (the capture's tests changed), the same parameters on both sides:
    # head's launch is compiled on both, and the kernel is not changed by the capture's coverage
    assert d["plain"]["status"] == d["tuned"]["status"] == "unchanged"
    assert [s["how"] for side in ("base", "head") for s in d["plain"]["specs"][side]] == [
        "launch", "launch"]
    # where head's kernel gained a parameter, base keeps its own (source) specialisation
    grown = SOURCE.replace("def plain(x_ptr, n,", "def plain(x_ptr, n, extra,")
    assert grown != SOURCE
    d = {k["name"]: k for k in diff_kernels(base, read_side({"lib/ops.py": grown}),
                                            {"head": {("lib/ops.py", "plain"): [r]}})}
    assert [s["how"] for s in d["plain"]["specs"]["base"]] != ["launch"]
    assert d["plain"]["why"] == ["source"]
    # launched on both sides, differently, by the same code (a grid sized from an unwritten
    # output, as nothing runs without a GPU): not a change of the kernel
    other = dict(r, constexprs={**r["constexprs"], "BLOCK": 2048})
    launched = {"base": {("lib/ops.py", "plain"): [r]}, "head": {("lib/ops.py", "plain"): [other]}}
    d = {k["name"]: k for k in diff_kernels(base, head, launched)}
    assert d["plain"]["status"] == "unchanged"


def test_two_launches_that_differ_only_in_dtype_are_two_names_and_pair_by_dtype():
    """Liger's tests launch one kernel at the same block size with fp32 and bf16 tensors: with
    one label for both, base's bf16 launch was paired with head's fp32 one (``pairs`` matches
    labels first) and a row compared two different binaries."""
    from runner.kernels.specs import label
    from runner.kernels.table import pairs

    def spec(x: str, rstd: str = "*fp32", n: str = "i32") -> dict:
        s = {"signature": {"X_ptr": x, "Y_ptr": x, "RSTD_ptr": rstd, "n_cols": n,
                           "BLOCK": "constexpr"},
             "constexprs": {"BLOCK": 64}, "num_warps": 4, "num_stages": 3}
        return {**s, "label": label(s)}

    fp32, bf16 = spec("*fp32"), spec("*bf16")
    assert fp32["label"] == "BLOCK=64 num_warps=4 num_stages=3"  # plain types go unsaid
    assert bf16["label"] == "BLOCK=64 num_warps=4 num_stages=3 *bf16 RSTD_ptr:*fp32"
    assert spec("*fp32", n="i64")["label"].endswith("num_stages=3 n_cols:i64")
    paired = pairs({"base": [fp32, bf16], "head": [bf16, fp32]})
    assert [(p["base"][1]["label"], p["head"][1]["label"]) for p in paired] == [
        (fp32["label"], fp32["label"]), (bf16["label"], bf16["label"])]


def test_a_launch_left_unpaired_meets_the_most_alike_on_the_other_side():
    """Liger #1208: base launches DyT at one block size; head's autotuner tries 18 configs.
    Pairing what is left in order compared base's launch with whichever config came first;
    the most alike (the same block size and warps) is the comparison that means something, and
    a launch with tensors of another dtype is never one."""
    from runner.kernels.specs import label
    from runner.kernels.table import pairs

    def spec(block: int, warps: int, x: str = "*fp32", beta: bool = False) -> dict:
        s = {"signature": {"X": x, "N": "constexpr", "BLOCK_N": "constexpr", "BETA": "constexpr"},
             "constexprs": {"N": 4096, "BLOCK_N": block, "BETA": beta}, "num_warps": warps,
             "num_stages": 3}
        return {**s, "label": label(s)}

    base = [spec(2048, 4), spec(2048, 4, "*bf16"), spec(1024, 8, beta=True)]
    head = [spec(1024, 4, beta=True), spec(2048, 8, beta=True), spec(2048, 4, beta=True),
            spec(4096, 4, beta=True)]
    got = [{side: (i, sp["constexprs"]["BLOCK_N"], sp["num_warps"])
            for side, (i, sp) in p.items()} for p in pairs({"base": base, "head": head})]
    assert got == [{"base": (0, 2048, 4), "head": (2, 2048, 4)},  # not head[0], the first left
                   {"base": (1, 2048, 4)},  # bf16: no fp32 config is its launch
                   {"base": (2, 1024, 8), "head": (0, 1024, 4)},
                   {"head": (1, 2048, 8)}, {"head": (3, 4096, 4)}]


def test_the_report_says_what_the_static_pass_skipped():
    from runner import report
    from tests.runner.test_report import _doc

    doc = _doc([])
    doc["kernels"] = {"ran": True, "archs": ["sm_90"], "unchanged": 0, "findings": [],
                      "jobs": {"compiled": 1, "cached": 0, "failed": 0, "skipped": 3},
                      "kernels": [{"path": "a.py", "name": "k", "status": "changed",
                                   "changed": True, "rows": []}]}
    md = report.render(doc, "md")
    assert "3 compile(s) skipped: the static pass's time was spent" in md
    assert "none got worse on head." in md


def test_changed_cuda_sources_are_said_not_analysed():
    from runner import report
    from runner.kernels.analysis import cuda_changes
    from tests.runner.test_report import _doc

    cuda = cuda_changes({"csrc/a.cu": b"x", "csrc/b.cuh": b"y"},
                        {"csrc/a.cu": b"x2", "csrc/b.cuh": b"y", "csrc/c.cu": b"z"})
    assert cuda["changed"] == ["csrc/a.cu", "csrc/c.cu"]
    doc = _doc([])
    doc["kernels"] = {"ran": True, "archs": ["sm_90"], "unchanged": 0, "findings": [],
                      "kernels": [], "cuda_sources": cuda}
    assert "2 changed CUDA C++ source(s) not analysed: CUDA C++ sources are not compiled" in (
        report.render(doc, "md"))


def test_sass_is_read_from_nvdisasm_output():
    from runner.kernels.usage import resource_usage, sass_counts

    sass = ("        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
            "        /*0010*/                   STL [R1+0xba8], R159 ;\n"
            "        /*0020*/              @!P0 LDL.64 R2, [R1+0x8] ;\n"
            "        /*0030*/                   NOP;\n"
            "	.section	.text.norm,\"ax\",@progbits\n")
    counts = sass_counts(sass)
    assert {k: counts[k] for k in ("instructions", "local_stores", "local_loads")} == {
        "instructions": 3, "local_stores": 1, "local_loads": 1}
    assert sass_counts(sass.replace("R159", "R158"))["sass_sha256"] != counts["sass_sha256"]
    usage = ("Resource usage:\n Common:\n  GLOBAL:0\n Function mm:\n"
             "  REG:255 STACK:5336 SHARED:1024 LOCAL:0 CONSTANT[0]:608 TEXTURE:0\n")
    assert resource_usage(usage, "mm") == {"registers": 255, "stack": 5336,
                                           "shared_static": 1024, "local": 0}


CONFIGS_BY_CODE = textwrap.dedent('''
    import triton
    import triton.language as tl

    WARPS = [4, 8]


    def get_configs():
        configs = []
        for bm in [64, 128]:
            for stages in range(2, 4):
                if bm * stages <= 256:
                    configs.append(triton.Config({"BM": bm}, num_warps=4, num_stages=stages))
        return configs


    @triton.autotune(configs=[triton.Config({"BM": b}, num_warps=w) for b in (32, 64)
                              for w in WARPS if b * w < 512], key=["n"])
    @triton.jit
    def by_comprehension(x_ptr, n, BM: tl.constexpr):
        pass


    @triton.autotune(configs=get_configs(), key=["n"])
    @triton.jit
    def by_function(x_ptr, n, BM: tl.constexpr):
        pass


    @triton.autotune(configs=make_configs(torch.cuda.get_device_capability()), key=["n"])
    @triton.jit
    def by_device(x_ptr, n, BM: tl.constexpr):
        pass


    def launch(x, n):
        BLOCK = triton.next_power_of_2(1000)
        warps = 4 if BLOCK < 2048 else 8
        settings, other = calculate_settings(n)
        by_device[(1,)](x, n, BM=BLOCK * 2, num_warps=warps)
        by_device[(1,)](x, settings, BM=other)
''')


def test_configs_and_launch_values_computed_by_simple_code():
    found = {k.name: k for k in kernels_in(CONFIGS_BY_CODE, "k.py")}
    assert [(c["kwargs"]["BM"], c["num_warps"]) for c in found["by_comprehension"].configs] == [
        (32, 4), (32, 8), (64, 4)]
    assert [(c["kwargs"]["BM"], c["num_stages"]) for c in found["by_function"].configs] == [
        (64, 2), (64, 3), (128, 2)]
    assert found["by_device"].configs == []
    assert found["by_device"].configs_note.startswith("autotune configs not read statically")
    first, second = launch_sites(CONFIGS_BY_CODE, "k.py")
    assert first["kwargs"]["BM"] == ("value", 2048) and first["kwargs"]["num_warps"] == ("value", 4)
    assert second["args"][1] is None and second["kwargs"]["BM"] is None


def test_pointers_are_the_parameters_that_reach_an_address():
    from runner.kernels.find import address_params

    fn = ast.parse(textwrap.dedent('''
        @triton.jit
        def attn(Q, K, V, Out, Labels, D, stride_qm, scale, N_CTX, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            q_ptrs = Q + offs[:, None] * stride_qm + offs[None, :]
            q = tl.load(q_ptrs)
            k_block = tl.make_block_ptr(base=K, shape=(N_CTX, D), strides=(stride_qm, 1),
                                        offsets=(0, 0), block_shape=(BLOCK, BLOCK), order=(1, 0))
            acc = _inner(q, V, D) * scale
            label = tl.load(Labels + offs).to(tl.int64)
            tl.store(Out + label, acc)
            Out += offs * D
            tl.store(Out + offs, acc)
    ''')).body[0]
    assert address_params(fn) == {"pointers": ["K", "Labels", "Out", "Q"],
                                  "index_pointers": ["Labels"],
                                  "opaque": ["D", "V"], "reads_memory": True}
    (kernel,) = kernels_in("import triton\n" + ast.unparse(fn), "a.py")
    (spec,) = specs_for(kernel, [])
    assert {n: t for n, t in spec["signature"].items() if t != "constexpr"} == {
        "Q": "*fp32", "K": "*fp32", "V": "*fp32", "Out": "*fp32", "Labels": "*i64", "D": "i32",
        "stride_qm": "i32", "scale": "fp32", "N_CTX": "i32"}


def test_a_parameter_added_to_a_loaded_index_is_an_offset_not_a_pointer():
    """flash-attention's cross-entropy: ``label_idx -= class_start_idx`` (it was guessed a
    pointer, and neither side compiled: 'invalid operands of type pointer<fp32> and int64')."""
    from runner.kernels.find import address_params

    fn = ast.parse(textwrap.dedent('''
        @triton.jit
        def ce(logits_ptr, labels_ptr, class_start_idx):
            label_idx = tl.load(labels_ptr + tl.program_id(0))
            label_idx -= class_start_idx
            tl.load(logits_ptr + label_idx)
    ''')).body[0]
    assert address_params(fn)["pointers"] == ["labels_ptr", "logits_ptr"]
    assert address_params(fn)["index_pointers"] == ["labels_ptr"]


def test_a_launch_whose_values_cannot_be_read_still_changes_its_kernel():
    """Liger-Kernel #1267: ``num_warps=32 if not is_hip() else 16`` became
    ``num_warps=ce_num_warps`` (dtype- and arch-aware): neither is read, the launch changed."""
    base = SOURCE.replace("plain[(1,)](x, 7, BLOCK=512, HAS_BIAS=True, num_warps=2)",
                          "plain[(1,)](x, 7, BLOCK=512, HAS_BIAS=True, "
                          "num_warps=32 if not is_hip() else 16)")
    head = SOURCE.replace("plain[(1,)](x, 7, BLOCK=512, HAS_BIAS=True, num_warps=2)",
                          "plain[(1,)](x, 7, BLOCK=512, HAS_BIAS=True, num_warps=warps(x))")
    d = _diff(base, head)
    assert d["plain"]["status"] == "changed" and d["plain"]["why"] == ["launch site"]
    assert [s["num_warps"] for s in d["plain"]["specs"]["head"]] == [4]  # Triton's default
    assert d["tuned"]["status"] == "unchanged"


def test_a_hint_is_less_sure_where_only_registers_grew_or_the_launch_was_guessed():
    from runner.kernels.table import hints

    def conf(worse, guessed=()):
        finding = {"kernel": "k", "path": "a.py", "arch": "sm_90", "spec": "", "worse": worse,
                   "guessed": list(guessed), "summary": "s"}
        return hints([finding])[0]["confidence"]

    assert conf(["registers", "spills"]) == 0.7 and conf(["registers"]) == 0.4
    assert conf(["occupancy"], ["BLOCK"]) == 0.52 and conf(["registers"], ["x_ptr"]) == 0.3


def test_a_kernel_s_launch_sites_are_not_those_of_its_namesake_in_another_file():
    """Liger-Kernel #1208 changed ``ops/dyt.py``'s ``_dyt_fwd_kernel`` and its launch; the
    Ascend backend's own ``_dyt_fwd_kernel`` (``ops/backends/_ascend/ops/dyt.py``, launched in
    that file) did not change and must not take the other file's launch sites."""
    backend = SOURCE.replace("BLOCK=512", "BLOCK=2048")
    base = read_side({"lib/ops.py": SOURCE, "lib/npu/ops.py": backend})
    head = read_side({"lib/ops.py": SOURCE.replace("BLOCK=512", "BLOCK=1024"),
                      "lib/npu/ops.py": backend})
    d = {(k["path"], k["name"]): k for k in diff_kernels(base, head)}
    assert d[("lib/npu/ops.py", "plain")]["status"] == "unchanged"
    main = d[("lib/ops.py", "plain")]
    assert main["why"] == ["specialisations", "launch site"]
    assert [s["constexprs"]["BLOCK"] for s in main["specs"]["base"]] == [512]
    assert [s["constexprs"]["BLOCK"] for s in main["specs"]["head"]] == [1024]


def test_each_compiled_answer_is_handed_on_as_it_arrives(tmp_path):
    """runner.kernels.compile.run_jobs: the cache keeps what a run compiled before its worker
    died or hung (it was written only when the whole run completed: a stopped run saved
    nothing)."""
    import json
    import sys

    from runner.kernels.compile import run_jobs

    fake = tmp_path / "python"   # stands in for "python -m runner.kernels.worker"
    fake.write_text(f"#!{sys.executable}\n"
                    "import json, sys\n"
                    "first = json.loads(sys.stdin.readline())\n"
                    "print(json.dumps({'id': first['id'], 'ok': True}), flush=True)\n"
                    "sys.exit(3)\n")   # dies before the second job
    fake.chmod(0o755)
    seen = []
    answers = run_jobs([{"id": "base|a"}, {"id": "base|b"}], tmp_path / "triton",
                       python=str(fake), timeout=120.0,
                       on_answer=lambda job_id, answer: seen.append((job_id, answer["ok"])))
    assert seen == [("base|a", True)]
    assert answers["base|a"]["ok"] and answers["base|b"]["stage"] == "crash"
    assert json.dumps(answers)  # plain data


def test_many_jobs_with_long_answers_and_a_chatty_target_do_not_stall_the_pass(tmp_path):
    """Liger #1208 captured 152 launches, 300 compile jobs: written into the worker's stdin pipe
    before any answer was read, they filled it while the worker's answers filled its stdout
    pipe, and both processes waited for ever. 300 jobs of 1 KB, answers of 1 KB, and a target
    that prints 100 KB to stderr as it loads, each past a pipe's 64 KB."""
    import sys
    import threading

    from runner.kernels.compile import run_jobs

    fake = tmp_path / "python"   # stands in for "python -m runner.kernels.worker"
    fake.write_text(f"#!{sys.executable}\n"
                    "import json, sys\n"
                    "sys.stderr.write('w' * 100_000)\n"
                    "for line in sys.stdin:\n"
                    "    job = json.loads(line)\n"
                    "    print(json.dumps({'id': job['id'], 'ok': True, 'pad': 'x' * 1000}),"
                    " flush=True)\n")
    fake.chmod(0o755)
    jobs = [{"id": f"base|{i}", "pad": "y" * 1000} for i in range(300)]
    done: dict = {}
    worker = threading.Thread(target=lambda: done.update(run_jobs(
        jobs, tmp_path / "triton", python=str(fake), timeout=300.0)), daemon=True)
    worker.start()
    worker.join(600)
    assert not worker.is_alive(), "run_jobs stalled"
    assert len(done) == 300 and all(a["ok"] for a in done.values())


def test_a_head_whose_block_no_sm_can_hold_is_said_not_to_launch():
    from runner.kernels.occupancy import occupancy
    from runner.kernels.table import sentence

    base = {"registers": 128, "stack": 0, "local": 0, "threads": 128,
            "occupancy": occupancy("sm_90", 128, 128, 64 * 1024)}
    head = {"registers": 128, "stack": 0, "local": 0, "threads": 128,
            "occupancy": occupancy("sm_90", 128, 128, 384 * 1024)}   # 256x256x64 fp16 tiles
    assert head["occupancy"]["blocks"] == 0
    text = sentence("matmul_kernel", {"base": base, "head": head, "arch": "sm_90",
                                      "spec": "BLOCK_M=256"})
    assert "it cannot launch on sm_90 (shared memory per block beyond what one SM gives" in text


def test_a_repository_without_triton_kernels_is_said_so():
    from runner.kernels.words import lines

    section = {"ran": True, "triton": "3.9.0", "archs": ["sm_90"], "kernels": [], "unchanged": 0,
               "jobs": {"compiled": 0, "cached": 0, "failed": 0, "skipped": 0}, "seconds": 0.1,
               "errors": {}, "findings": []}
    assert lines(section)[0].endswith("; no @triton.jit kernel in either revision")
    assert "no @triton.jit" not in lines(dict(section, unchanged=2))[0]


FLAGS = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def rotary(OUT, X, SEQLEN_OFFSETS, EPS_LOW, n, SAPO_TEMP_POS: tl.constexpr,
               DELTA: tl.constexpr, IS_TENSOR: tl.constexpr, has_dS_out: tl.constexpr,
               INTERLEAVED: tl.constexpr, CONJ: tl.constexpr, mixed: tl.constexpr,
               NUM_STEPS: tl.constexpr, BLOCK: tl.constexpr):
        rm = tl.arange(0, BLOCK)
        if not IS_TENSOR:
            rm_cs = rm + SEQLEN_OFFSETS
        else:
            rm_cs = rm + tl.load(SEQLEN_OFFSETS + tl.program_id(0))
        x = tl.load(X + rm_cs * 2) * EPS_LOW * SAPO_TEMP_POS + DELTA
        if has_dS_out:
            x = x * 2
        if not INTERLEAVED and n > 0:
            x = x + 1
        x = -x if CONJ else x
        if mixed:
            x = x * mixed
        for _ in range(NUM_STEPS):
            x = x + 1
        tl.store(OUT + rm, x)
''')


def test_a_float_s_name_a_flag_and_the_live_branch_decide_the_guesses():
    from runner.kernels.specs import condition_flags, float_name, live_function

    assert [n for n in ("EPS_LOW", "SAPO_TEMP_POS", "DELTA", "eps", "sm_scale", "BLOCK_N",
                        "TEMPLATE", "NUM_STEPS", "n_cols", "Scale_row_stride")
            if float_name(n)] == [
        "EPS_LOW", "SAPO_TEMP_POS", "DELTA", "eps", "sm_scale"]
    (kernel,) = kernels_in(FLAGS, "k.py")
    # a flag is what the kernel only tests for truth (mixed is also a number, BLOCK a size)
    assert condition_flags(kernel) == {"IS_TENSOR", "has_dS_out", "INTERLEAVED", "CONJ"}
    # read from every branch, SEQLEN_OFFSETS reaches a load: a pointer, and `rm + pointer`
    # does not compile; the branch IS_TENSOR=False selects adds it to an index: an int
    assert "SEQLEN_OFFSETS" in kernel.addresses["pointers"]
    assert live_function(kernel, {"BLOCK": 64}) is None  # no branch decided
    (spec,) = specs_for(kernel, [])
    assert spec["constexprs"] == {"SAPO_TEMP_POS": 1.0, "DELTA": 1.0, "IS_TENSOR": False,
                                  "has_dS_out": False, "INTERLEAVED": False, "CONJ": False,
                                  "mixed": 64, "NUM_STEPS": 64, "BLOCK": 64}
    assert {k: v for k, v in spec["signature"].items() if v != "constexpr"} == {
        "OUT": "*fp32", "X": "*fp32", "SEQLEN_OFFSETS": "i32", "EPS_LOW": "fp32", "n": "i32"}
    assert spec["guessed"][:3] == ["OUT", "X", "SEQLEN_OFFSETS"]  # in parameter order
    # where the launch says the offsets are a tensor, the other branch is live: a pointer
    site = {"kernel": "rotary", "path": "k.py", "line": 1, "text": "", "args": [],
            "kwargs": {"IS_TENSOR": ("value", True)}}
    (tensor,) = specs_for(kernel, [site])
    assert tensor["signature"]["SEQLEN_OFFSETS"] == "*fp32"


def _compared_row(base_spec: dict, head_spec: dict, base_regs: int, head_regs: int) -> dict:
    from runner.kernels.table import rows

    def answer(regs):
        return {"ok": True, "usage": {"registers": regs, "stack": 0, "local": 0,
                                      "shared_static": 0, "instructions": 10,
                                      "local_stores": 0, "local_loads": 0},
                "shared_dynamic": 0, "sass": {"sass_sha256": str(regs)}, "sha256": str(regs)}

    kernel = {"name": "k", "path": "k.py", "specs": {"base": [base_spec], "head": [head_spec]}}
    answers = {"base|k.py|k|0|sm_90": answer(base_regs), "head|k.py|k|0|sm_90": answer(head_regs)}
    return {**kernel, "rows": rows(kernel, ["sm_90"], answers)}


def _spec_of(signature: dict, constexprs: dict, guessed: list) -> dict:
    spec = {"signature": signature, "constexprs": constexprs, "num_warps": 4, "num_stages": 3,
            "aligned": [], "how": "launch site", "guessed": guessed}
    return {**spec, "label": " ".join(f"{k}={v}" for k, v in constexprs.items())}


def test_a_growth_between_unlike_guesses_is_withheld_and_a_guessed_one_is_said_guessed():
    from runner.kernels.table import findings, hints
    from runner.kernels.words import lines

    base = _spec_of({"x_ptr": "*fp32", "EPS": "fp32", "BLOCK": "constexpr"}, {"BLOCK": 64},
                    ["x_ptr", "EPS", "BLOCK"])
    # head made EPS a constexpr: its value is a guess base's launch does not share
    head = _spec_of({"x_ptr": "*fp32", "EPS": "constexpr", "BLOCK": "constexpr"},
                    {"EPS": 1e-6, "BLOCK": 64}, ["x_ptr", "EPS", "BLOCK"])
    kernel = _compared_row(base, head, 19, 25)
    (row,) = kernel["rows"]
    assert row["worse"] == ["registers"]
    assert row["unlike_guesses"] == ["EPS (base fp32 guessed, head 1e-06 guessed)"]
    assert row["withheld"].startswith("not a finding: base and head were guessed differently")
    assert findings([kernel]) == [] and hints(findings([kernel])) == []
    section = {"ran": True, "triton": "3.9.0", "archs": ["sm_90"], "seconds": 1,
               "jobs": {"compiled": 2, "cached": 0, "failed": 0, "skipped": 0},
               "unchanged": 0, "errors": {}, "findings": [],
               "kernels": [{**kernel, "line": 1, "status": "changed", "changed": True,
                            "why": ["source"], "helper_of": []}]}
    assert any("WORSE: registers (not a finding: base and head were guessed" in line
               for line in lines(section))
    # a value read on one side and guessed on the other is not the same launch either
    read = _spec_of(head["signature"], head["constexprs"], ["x_ptr", "BLOCK"])
    (row,) = _compared_row(read, head, 19, 25)["rows"]
    assert row["unlike_guesses"] == ["EPS (base 1e-06, head 1e-06 guessed)"]
    # guessed alike on both sides: a finding, worded as the guess's, not the real launch's
    kernel = _compared_row(head, head, 19, 25)
    (row,) = kernel["rows"]
    assert row["unlike_guesses"] == [] and row["withheld"] is None
    (found,) = findings([kernel])
    assert found["summary"].startswith(
        "at a guessed specialisation (x_ptr, EPS, BLOCK guessed, alike on both sides; the real "
        "launch may compile otherwise), head's `k` uses 25 registers/thread")
    # a row that did not get worse is never withheld
    (row,) = _compared_row(base, head, 25, 19)["rows"]
    assert row["withheld"] is None and row["unlike_guesses"]

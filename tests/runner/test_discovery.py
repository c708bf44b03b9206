"""Discovery: files, functions, params products, names, filters."""

from __future__ import annotations

import textwrap

import pytest

from runner.conventions import perfgate as discovery
from runner.selection import matches


def test_params_cartesian_product_and_names():
    combos = discovery.expand_params({"rows": [1024, 4096], "dtype": ["fp16", "bf16"]})
    assert len(combos) == 4
    names = [discovery.case_name("bench_norm", c) for c in combos]
    assert names[0] == "bench_norm[rows=1024,dtype=fp16]"
    assert discovery.expand_params(None) == [{}]
    assert discovery.case_name("bench_x", {}) == "bench_x"
    with pytest.raises(TypeError):
        discovery.expand_params({"rows": "1024"})


@pytest.mark.parametrize("pattern,name,hit", [
    (None, "bench_a", True),
    ("norm", "bench_layer_norm[rows=4096]", True),
    ("bench_layer*", "bench_layer_norm[rows=4096]", True),
    ("bench_layer_norm", "bench_layer_norm[rows=4096]", True),
    ("*rows=1024*", "bench_layer_norm[rows=4096]", False),
    ("softmax", "bench_layer_norm", False),
])
def test_filter(pattern, name, hit):
    assert matches(name, pattern) is hit


def test_collect_imports_files_and_reports_broken_ones(tmp_path):
    (tmp_path / "bench_good.py").write_text(textwrap.dedent("""
        from math import sqrt as bench_imported

        def bench_a(device, n=1):
            return lambda: n

        bench_a.params = {"n": [1, 2]}

        def helper():
            pass
    """))
    (tmp_path / "bench_broken.py").write_text("def bench_x(:\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bench_nested.py").write_text("def bench_n(device):\n    return lambda: 1\n")
    (tmp_path / "not_a_bench.py").write_text("def bench_z(device):\n    return lambda: 1\n")
    cases, errors = discovery.collect(tmp_path)
    assert [c["name"] for c in cases] == ["bench_a[n=1]", "bench_a[n=2]", "bench_n"]
    assert cases[2]["file"] == "sub/bench_nested.py"
    assert len(errors) == 1 and errors[0]["file"] == "bench_broken.py" and "SyntaxError" in errors[0]["error"]


def test_param_labels_are_stable_and_readable():
    import enum
    import functools

    import torch
    import torch.nn.functional as F

    class Mode(enum.Enum):
        FAST = 1

    class Opaque:
        pass

    def local_fn():
        return None

    assert discovery.param_label(torch.bfloat16) == "torch.bfloat16"
    assert discovery.param_label(torch.device("cpu")) == "cpu"
    assert discovery.param_label(F.gelu) == "gelu"
    assert discovery.param_label(local_fn) == "test_param_labels_are_stable_and_readable.local_fn"
    assert discovery.param_label(torch.nn.LayerNorm) == "LayerNorm"
    assert discovery.param_label(Mode.FAST) == "Mode.FAST"
    assert discovery.param_label((1024, "fp16")) == "(1024, fp16)"
    assert discovery.param_label((1,)) == "(1,)"
    assert discovery.param_label([torch.float16, None]) == "[torch.float16, None]"
    assert discovery.param_label(Opaque(), 3) == "Opaque#3"
    assert " at 0x" not in discovery.param_label(functools.partial(local_fn))


def test_resolve_case_finds_values_by_name_on_its_own_revision(tmp_path):
    import types

    import torch

    module = types.ModuleType("m")

    def bench_x(device, dtype):
        return dtype

    bench_x.params = {"dtype": [torch.float32, torch.bfloat16]}
    module.bench_x = bench_x
    func, values = discovery.resolve_case(module, "bench_x", "bench_x[dtype=torch.bfloat16]", "bench_m.py")
    assert func is bench_x and values == {"dtype": torch.bfloat16}
    with pytest.raises(LookupError, match="not among the params"):
        discovery.resolve_case(module, "bench_x", "bench_x[dtype=torch.float16]", "bench_m.py")
    with pytest.raises(LookupError, match="not defined in bench_m.py"):
        discovery.resolve_case(module, "bench_y", "bench_y", "bench_m.py")

"""Discovery: files, functions, params products, names, filters."""

from __future__ import annotations

import textwrap

import pytest

from runner import discovery


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
    assert discovery.matches(name, pattern) is hit


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

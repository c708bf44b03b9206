"""runner.intent.diff.excerpt: what the classifier reads of a diff (library source hunks first)."""

from __future__ import annotations

from runner.intent import diff


def _file(path: str, *hunks: tuple[int, list[str]]) -> str:
    out = [f"diff --git a/{path} b/{path}", "index 1..2 100644", f"--- a/{path}", f"+++ b/{path}"]
    for start, lines in hunks:
        removed = sum(line.startswith("-") for line in lines) + sum(line.startswith(" ") for line in lines)
        added = sum(line.startswith("+") for line in lines) + sum(line.startswith(" ") for line in lines)
        out.append(f"@@ -{start},{removed} +{start},{added} @@ def f():")
        out.extend(lines)
    return "\n".join(out) + "\n"


def test_file_rank_puts_library_source_before_build_files_before_tests_and_docs():
    assert diff.file_rank("csrc/attention/kernel.cu") == 0
    assert diff.file_rank("vllm/model_executor/layers/linear.py") == 0
    assert diff.file_rank("CMakeLists.txt") == 1 and diff.file_rank("setup.py") == 1
    assert diff.file_rank(".github/workflows/ci.yml") == 1
    for path in ("tests/test_linear.py", "benchmarks/bench_gemm.py", "docs/index.md", "README.md",
                 "csrc/kernel_test.cu", "examples/run.py"):
        assert diff.file_rank(path) == 2, path


def test_excerpt_takes_library_source_first_and_drops_context():
    tests = _file("tests/test_k.py", (1, [f"+    assert k({i})" for i in range(50)]))
    build = _file("CMakeLists.txt", (3, ["-set(ARCH 80)", "+set(ARCH 90a)"]))
    source = _file("csrc/k.cu", (10, ["     int i = threadIdx.x;", "-__global__ void k(float* x) {",
                                     "+__global__ void __launch_bounds__(256) k(float* x) {"]))
    cut = diff.excerpt(tests + build + source)
    lines, paths = diff.parse(cut)
    assert paths == ["csrc/k.cu", "CMakeLists.txt", "tests/test_k.py"]
    assert [line.text for line in lines[:2]] == ["__global__ void k(float* x) {",
                                                 "__global__ void __launch_bounds__(256) k(float* x) {"]
    assert "int i = threadIdx.x;" not in cut and "@@ -10,1 +10,1 @@" in cut      # context dropped, header recounted
    assert sum(line.startswith(("+", "-")) and not line.startswith(("+++", "---")) for line in cut.splitlines()) == 54


def test_excerpt_stops_at_whole_hunks_and_cuts_only_a_first_long_hunk():
    first = _file("lib/a.py", (1, [f"+x{i} = {i}" for i in range(50)]), (90, [f"+y{i} = {i}" for i in range(20)]))
    cut = diff.excerpt(first)
    assert "+x49 = 49" in cut and "+y0 = 0" not in cut            # the second hunk would pass 60 lines
    long = diff.excerpt(_file("lib/b.py", (1, [f"+z{i} = {i}" for i in range(200)])))
    assert sum(line.startswith("+z") for line in long.splitlines()) == diff.EXCERPT_LINES
    wide = diff.excerpt(_file("lib/c.py", (1, ["+" + "w" * 500])))
    assert max(len(line) for line in wide.splitlines()) == diff.EXCERPT_CHARS


def test_excerpt_keeps_a_diff_without_git_headers_and_filters_lines():
    snippet = "--- a/k.cu\n+++ b/k.cu\n@@ -1 +1 @@\n-old\n+new\n"
    assert diff.excerpt(snippet) == snippet
    assert diff.excerpt("") == ""
    mail = _file("lib/m.py", (1, ["+a = 1", "+# mail x@example.com"]))
    assert "example.com" not in diff.excerpt(mail, keep=lambda line: "@" not in line)

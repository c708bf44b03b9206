"""The engine's pipeline shell decides nothing: every branch of its modules (``if``, ``elif``,
conditional expressions, ``while`` and comprehension conditions, read with :mod:`ast` as
tests/app/test_shell_decides_nothing.py reads the App's) tests a value that is absent (``is
None``), a worker's or the machine's answer, the time left, a switch the caller or the
configuration declared, or follows what a pure module decided (a call into it); any other branch
is a policy decision in the shell and must move to its module (:mod:`runner.pipeline.timing.stops`,
``schedule``, ``evidence``, ``clock_plan``, :mod:`runner.selection`, ...) or be one of the few
resource and retry mechanics listed in :data:`ALLOWED`, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.app.test_shell_decides_nothing import _branches

ROOT = Path(__file__).resolve().parents[2]

#: The shells of a compare and a run (in runner/pipeline/): the two pipelines, the part they share,
#: the timing driver and the workers' parent side.
SHELL = ("compare.py", "run.py", "session.py", "timing/timing.py", "timing/workers.py")
PIPELINE = "runner/pipeline"

#: Pure modules (tests/test_layers.py PURE): a branch on a call into one follows its decision.
CORE = {"stats", "schedule", "evidence", "stops", "selection", "clock_plan", "conditions",
        "benchstate", "measures", "sustained"}

#: Names and attributes that hold a worker's or the machine's answer (a reply, a hello, a line
#: read, an exit status, an exception, the set-ups that succeeded) or the worker process's state.
OUTCOMES = {"reply", "answer", "listing", "hello", "resp", "msg", "chunk", "line", "sel", "code",
            "exc", "ok", "self.server", "self.child_pid", "self._log", "self._buf"}

#: Calls whose answer is an outcome: a filesystem's, a worker process's, or one of the timing
#: driver's own requests (its branches are read here too; it answers whether the worker did it).
OUTCOME_CALLS = {"is_dir", "_server_alive", "_await_exit", "_ensure_server", "setup", "sample",
                 "warm_up", "new_process_pair", "settles", "head_samples", "_first_pair",
                 "_rounds_until", "_next_pair", "_round", "_pair_fits"}

#: What a comparison against the clock reads: the time left is a resource, not a policy.
CLOCKS = {"clock", "monotonic", "deadline", "left", "budget_end", "end"}

#: Roots of a switch the caller (``req``) or the configuration (``cfg``) declared.
DECLARED = {"req", "cfg"}

#: Branches that test data but are resource or retry mechanics, not policy, by module:
#: ``(function, the test as ast.unparse writes it)`` → why.
MECHANICS = {
    "compare.py": {("_intent", "req.pr.given()"):
                   "the declared request: the PR's own text given (intent's recorded source)"},
    "run.py": {("run_single", "code_map"): "the declared request: --no-code-map",
               ("_map", "not cases"): "cost: no map pass without benchmarks to map"},
    "session.py": {("configuration", "config_file"): "the declared request: --config FILE",
                   ("bench_dirs", "given"): "the declared request: --benchmarks DIR"},
    "timing/timing.py": {
        ("_rounds_until", "len(state.blocks()) < pairs"):
            "the planned look (runner.stats.look_schedule) carried out: rounds until its pairs",
        ("_rounds_until", "state.pair_complete() and (not self._next_pair(state, deadline))"):
            ("the rounds per pair (runner.pipeline.timing.schedule) carried out: "
             "a new pair after them"),
        ("_each", "not states"): "cost: no pass, and no progress bar, without benchmarks",
        ("_time_all", "not pending or self.clock() >= budget_end"):
            "the second pass ends when stops.resumable leaves no benchmark, or the budget is spent",
        ("_time_all", "not progressed"):
            "retry mechanics: a second pass in which no benchmark took a round is not repeated"},
    "timing/workers.py": {
        ("_start_server", "self.cpus"): "carries out the CPU plan: pin only to CPUs it names",
        ("_start_server", "self.preload_dir and (not self.preload_refused)"):
            "restart mechanics: a restarted server imports the benchmarks again, if safe to fork",
        ("use_layout", "layout != self.layout"):
            "process mechanics: park the current layout's server when another one is asked for",
        ("_read", "expect_child and self.child_pid is not None"):
            "retry mechanics: a child that timed out is killed, a server that did is restarted"},
}
ALLOWED = {(module, function, test) for module, branches in MECHANICS.items()
           for function, test in branches}


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` of a name or attribute chain (through calls and subscripts), or None."""
    parts = []
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id] + parts[::-1])


def _among(dotted: str | None, names: set[str]) -> bool:
    return dotted is not None and any(dotted == n or dotted.startswith(n + ".") for n in names)


def _reads(node: ast.AST) -> set[str | None]:
    """The chains a test reads (each outermost name or attribute chain; literals read nothing)."""
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        return {_dotted(node)}
    return {r for child in ast.iter_child_nodes(node) for r in _reads(child)}


def _name(func: ast.AST) -> str:
    """A called function's own name (``self.clock`` → ``clock``, ``(a / b).is_dir`` →
    ``is_dir``)."""
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _called(node: ast.AST) -> set[str]:
    """The names of every function a test calls (:func:`_name`)."""
    return {_name(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}


def _follows(test: ast.AST) -> bool:
    """Does ``test`` look only at outcomes, the time left, declared switches or a pure module's
    answer?"""
    if isinstance(test, ast.Constant):
        return True  # while True: a loop that ends on an outcome inside it
    if isinstance(test, ast.BoolOp):
        return all(_follows(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _follows(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 \
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return True  # a value that is absent (not given, not found, not answered)
    if isinstance(test, ast.Compare):
        reads = _reads(test)
        return bool(_called(test) & CLOCKS or {r for r in reads if r} & CLOCKS) \
            or all(_among(r, OUTCOMES) for r in reads)
    dotted = _dotted(test) or ""
    if isinstance(test, ast.Call) and dotted == "isinstance":
        return _follows(test.args[0])  # the type of an outcome
    if dotted.split(".")[0] in CORE and _called(test):
        return True  # a pure module's answer, followed
    if isinstance(test, ast.Call) and _name(test.func) in OUTCOME_CALLS:
        return True  # a filesystem's, a worker process's or the driver's own request's answer
    declared = isinstance(test, ast.Attribute) and dotted.split(".")[0] in DECLARED
    return _among(dotted, OUTCOMES) or declared


def shell_branches() -> list[tuple[str, str, str]]:
    """``(module, function, test)`` of every branch of the shell that is not an outcome, a
    resource or a pure module's decision followed."""
    return [(m, f, ast.unparse(t)) for m in SHELL for f, t in _branches(ROOT / PIPELINE / m)
            if not _follows(t)]


def test_the_pipeline_shell_branches_only_on_outcomes_resources_and_listed_mechanics():
    found = shell_branches()
    decisions = "\n".join(f"  {m}:{f}: {t}" for m, f, t in found if (m, f, t) not in ALLOWED)
    assert not decisions, f"decisions in the engine's shell (move them to a pure module):\n" \
        f"{decisions}"
    # an allowed branch that is gone leaves MECHANICS too (the list stays small and true)
    assert sorted(ALLOWED - set(found)) == []


@pytest.mark.parametrize("source, follows", [
    ("if reply is None: pass", True), ("if isinstance(reply, Failure): pass", True),
    ("if stops.after_setup(ok['head'], None, False) is not None: pass", True),
    ("if schedule.futility(c, t, a, f, 8).futile: pass", True),
    ("if self.clock() + state.round_estimate() > deadline: pass", True),
    ("if not self.sample(state, side): pass", True), ("x = a if cfg.install else b", True),
    ("if state.verdict == 'regression': pass", False), ("if len(state.head) >= 2: pass", False),
    ("if str(env.get('device')).startswith('cuda'): pass", False),
    ("x = 1 if cfg.threshold > 0.1 else 0", False),
    ("if s.case.get('measures') == 'self': pass", False),
    ("y = [c for c in cases if c['name'] not in head]", False),
])
def test_the_classifier_tells_an_outcome_from_a_decision(source, follows):
    kinds = (ast.If, ast.IfExp, ast.comprehension)
    (node,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, kinds)]
    assert _follows(node.ifs[0] if isinstance(node, ast.comprehension) else node.test) is follows


def test_a_decision_added_to_the_shell_fails(tmp_path, monkeypatch):
    """The check catches a policy added to the timing driver (the kind compare's ``_measure``
    held: a branch on a benchmark's kind)."""
    here = __import__(__name__, fromlist=["ROOT"])
    start = "        t0 = self.clock()\n        self.share_end = deadline\n        try:\n"
    policy = ("        t0 = self.clock()\n        self.share_end = deadline\n"
              "        if state.case.get('measures') == 'self':\n"
              "            return state.verdict\n        try:\n")
    (tmp_path / PIPELINE).mkdir(parents=True)
    for module in SHELL:
        source = (ROOT / PIPELINE / module).read_text("utf-8")
        changed = source.replace(start, policy, 1) if module == "timing/timing.py" else source
        assert (changed != source) is (module == "timing/timing.py")
        (tmp_path / PIPELINE / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / PIPELINE / module).write_text(changed, "utf-8")
    monkeypatch.setattr(here, "ROOT", tmp_path)
    decisions = [b for b in shell_branches() if b not in ALLOWED]
    assert decisions == [
        ("timing/timing.py", "run_benchmark", "state.case.get('measures') == 'self'")]

"""The strategy taxonomy (../shared/STRATEGIES.md) and the signals that point at each strategy.

This module is data: ids, levels, and for every strategy the regular expressions that are
evidence for it, with weights. ``runner.intent.classify`` applies them. The ids are stable
(they are stored in results.json and in the history); the patterns may grow.

Weights are dimensionless evidence points. The classifier names a strategy once its summed
evidence reaches ``MIN_SCORE`` = 1.5 (classifier.py): one specific signal is enough (a
phrase of weight >= 1.0 in the title, which counts 1.5x, or >= 1.5 elsewhere, such as "warp
shuffle"; a code token such as ``__launch_bounds__`` on an added line), a weak one ("stream",
"tile" in the body) needs company. Words weighted below 1.0 ("register", "arch", "numpy",
"replay", "sweep", "allocat...") are ambiguous outside performance work and can never name a
strategy alone, not even in the title (0.9 x 1.5 < 1.5). Words that say only "this is
faster" ("speed up", "optimize", "perf") are deliberately in no strategy.

Each strategy's list starts with the rules v1 (written from the signal column of
STRATEGIES.md) and ends with the v2 additions: paraphrases, synonyms and identifiers that PR
authors use instead of the stock words ("on-chip memory" for shared memory, "butterfly
exchange across lanes" for warp shuffles, "replay the captured graph" for CUDA Graphs).
Rules v3 (marked ``# v3``) add disambiguating phrases and the ``NON_OPTIMISATION_*`` cues (a
change that adds tests, benchmarks or docs, fixes a bug, bumps a dependency, reverts, renames
or refactors is not itself an optimisation; ``classifier.non_optimisation_cues``).
Rules v4 (``_V4_TEXT`` and weights marked ``v4``) were written from the errors on the
``real-train`` split of evaluation/intent_real.jsonl (real merged pull requests): data-type and
library names are context, and the non-optimisation cues are wider (``FIX_PREFIX``,
``PERF_TAG``). evaluation/RESULTS_intent.md says on which labeled texts each version was tuned.

Text patterns are matched against lower-cased title / body / labels / commit messages.
Code patterns are matched, case-sensitively unless they say ``(?i:...)``, against the added
and removed lines of the diff; ``added`` and ``removed`` scale the weight by the side of the
diff the line is on (removing ``.item()`` is evidence of host_sync_elimination, adding it is
not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: id -> (level, one-line description), in the order of STRATEGIES.md.
STRATEGIES: dict[str, tuple[str, str]] = {
    "algorithm_replacement": ("logic", "a cheaper algorithm for the same result"),
    "redundancy_elimination": ("logic", "hoist, cache or reuse instead of recomputing"),
    "copy_avoidance": ("logic", "views, in-place ops, fewer .contiguous() / clone()"),
    "precision_specialization": ("logic", "fp16/bf16/tf32/int8 paths, accumulation type"),
    "layout_fast_path": ("logic", "channels_last / contiguous / 32-bit-index fast paths"),
    "math_simplification": ("logic", "intrinsics, fast math, strength reduction"),
    "kernel_fusion": ("execution", "several kernels become one"),
    "vectorization": ("execution", "wide loads/stores"),
    "memory_coalescing": ("execution", "access-pattern and stride fixes"),
    "tiling_shared_memory": ("execution", "tiles staged in shared memory"),
    "launch_config_tuning": ("execution", "block/grid sizes, grid-stride loops, warps, stages"),
    "occupancy_control": ("execution", "register / occupancy limits"),
    "warp_level_reduction": ("execution", "warp shuffles, block reduce, split-K"),
    "atomic_contention_avoidance": ("execution", "fewer or privatised atomics"),
    "autotuning": ("execution", "search configurations at run or build time"),
    "vendor_library_dispatch": ("execution", "call cuBLAS / cuDNN / CUTLASS / FlashAttention instead of a native kernel"),
    "host_sync_elimination": ("infrastructure", "remove .item(), .cpu(), stream/device synchronisations"),
    "stream_concurrency": ("infrastructure", "overlap work on several streams, prefetch"),
    "launch_overhead_reduction": ("infrastructure", "CUDA Graphs, multi-tensor apply, batched launches"),
    "allocator_reuse": ("infrastructure", "caching allocator, workspace reuse"),
    "transfer_reduction": ("infrastructure", "fewer host<->device copies"),
    "build_configuration": ("infrastructure", "arch lists, compiler flags, JIT caches"),
}

UNKNOWN = "unknown"


@dataclass(frozen=True)
class TextRule:
    """A pattern over lower-cased prose; ``weight`` evidence points when it matches."""

    strategy: str
    pattern: re.Pattern
    weight: float


@dataclass(frozen=True)
class CodeRule:
    """A pattern over one diff line; ``weight`` x side factor x location factor per match.

    ``triggers``: lower-case substrings of which a line must contain one for the pattern to
    be able to match (None: no such set, always try). Derived from the pattern.
    """

    strategy: str
    pattern: re.Pattern
    weight: float
    added: float = 1.0
    removed: float = 0.5
    triggers: tuple[str, ...] | None = None


def literal_triggers(pattern: str) -> tuple[str, ...] | None:
    """For each top-level alternative of ``pattern``, its longest required literal run (lower-case).

    A literal run is a stretch of plain characters outside groups and character classes; a
    character made optional by ``?``, ``*`` or ``{0,`` ends it. Returns None when some
    alternative has no run of at least 2 characters (the pattern must then always be tried).
    Only a speed-up: a line without any trigger cannot match.
    """
    inner = pattern[4:-1] if pattern.startswith("(?i:") and pattern.endswith(")") else pattern
    triggers = []
    for branch in _top_level_branches(inner):
        runs, run, i, depth = [], "", 0, 0
        while i < len(branch):
            ch = branch[i]
            if ch == "\\" and i + 1 < len(branch):
                nxt = branch[i + 1]
                if depth == 0 and not nxt.isalnum():
                    run += nxt
                elif depth == 0:
                    runs.append(run)
                    run = ""
                i += 2
                continue
            if ch in "([":
                runs.append(run)
                run = ""
                depth, i = _skip_group(branch, i), i
                i = depth
                depth = 0
                continue
            if ch in "?*" or branch.startswith("{0,", i):
                runs.append(run[:-1])
                run = ""
            elif ch in "+{}|^$.":
                runs.append(run)
                run = ""
            else:
                run += ch
            i += 1
        runs.append(run)
        best = max(runs, key=len)
        if len(best) < 2:
            return None
        triggers.append(best.lower())
    return tuple(triggers)


def _top_level_branches(pattern: str) -> list[str]:
    branches, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    branches.append(pattern[start:])
    return branches


def _skip_group(pattern: str, i: int) -> int:
    """Index just past the group or character class that starts at ``i``."""
    close = ")" if pattern[i] == "(" else "]"
    depth, j = 0, i
    while j < len(pattern):
        ch = pattern[j]
        if ch == "\\":
            j += 2
            continue
        if close == "]":
            if ch == "]" and j > i + 1:
                return j + 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        elif ch == "[":
            j = _skip_group(pattern, j)
            continue
        j += 1
    return j


# ``_FEW``: up to 40 characters within one sentence (a period inside a token such as ``.item()`` is fine).
_FEW = r"(?:[^.\n]|\.(?=\S)){0,40}?"

_TEXT: dict[str, list[tuple[str, float]]] = {
    "algorithm_replacement": [
        (r"\b(?:faster|better|cheaper|smarter|new|different|simpler|more efficient) algorithm", 2.0),
        (r"\balgorithm(?:ic)?\b", 1.0),
        (r"\b(?:time |asymptotic )?complexity\b", 1.5),
        (r"\bo\(\s*(?:n|k|log)[^)]{0,12}\)", 2.0),
        (r"\bquadratic\b|\blinear[- ]time\b|\blog[- ]linear\b", 1.5),
        (r"\brewr(?:i|o)te" + _FEW + r"\b(?:using|with|as|via)\b", 1.0),
        (r"\b(?:radix|merge|bitonic|counting) sort\b|\bbinary search\b|\bsearchsorted\b|\bprefix[- ]sum\b|\bscan-based\b|\bsegmented (?:scan|reduction|sort)\b", 1.5),
        (r"\bwelford\b|\bonline softmax\b|\bsingle-pass\b|\bone-pass\b|\btwo-pass\b", 1.0),
        (r"\binstead of (?:a |the )?(?:full )?(?:sort|sorting)\b", 1.5),
        (r"\bhash(?:ing|ed)?\b" + _FEW + r"\b(?:instead of|rather than|turns?|lookups?|probes?|joins?)\b|\bhash (?:join|map|table|lookup)\b|\bnested loops?\b|\bdictionary (?:probe|lookup)\b", 1.5),
        (r"\b(?:cholesky|lu|qr|eigen\w*|svd|schur) (?:factori[sz]ation|decomposition|solve|path)\b|\bscaling and squaring\b|\bnewton(?:[- ]schulz)?\b|\bpad[eé] approximant\b|\bclosed[- ]form\b", 1.5),
        (r"\blook-?back\b|\bdecoupled\b" + _FEW + r"\bscan\b|\bsingle[- ]pass\b|\bone pass over\b|\b(?:two|three|four|multiple|several|\d) (?:passes|sweeps) over\b", 1.5),
        (r"\b(?:naive|brute[- ]force|exhaustive pairwise|comparison sort|argsort)\b|\binstead of (?:a |the )?(?:general|generic|naive|full|quadratic)\b|\bn log n\b", 1.0),
        (r"\b(?:counting|histogram(?:ming)?|bucket(?:ing)?) (?:pass|sort|approach)\b|\bprefix offsets?\b|\bin linear time\b|\blinear in\b", 1.5),
        (r"\b(?:new|different|better|cheaper|simpler|faster) (?:method|approach|formulation|scheme|recurrence|decomposition)\b", 0.7),
    ],
    "redundancy_elimination": [
        (r"\bavoid(?:s|ing)? (?:re-?computing|recomputation|recompute|computing \w+ twice|redundant (?:computation|work|calls?|kernels?|ops))", 2.5),
        (r"\bredundant (?:computation|work|calls?|recomputation|ops?|kernels?|calculations?)\b", 2.0),
        (r"\brecomput\w*", 1.5),
        (r"\bhoist\w*", 2.0),
        (r"\bout of the (?:inner |hot |outer )?loop\b", 1.5),
        (r"\bmemoi[sz]\w*|\blru_cache\b|\bcse\b|\bcommon subexpression", 2.0),
        (r"\bprecomput\w*|\bcompute(?:d)? (?:it |them |\w+ )?once\b|\bonly once\b", 1.5),
        (r"\bcach(?:e|es|ed|ing) (?:the )?(?:result|results|value|values|mask|masks|indices|index|metadata|cos|sin|rotary|positions?|shapes?|lookups?|computed|per-)", 2.0),
        (r"\breus(?:e|es|ing) (?:the )?(?:computed|already[- ]computed|previous|existing)? ?(?:results?|values?|mask|indices|output|sum|statistics|stats)\b", 1.5),
        (r"\bduplicate(?:d)? (?:computation|work|calls?)\b", 2.0),
        (r"\b(?:build|builds|built|construct\w*|creat\w+|comput\w+|evaluat\w+|initiali[sz]\w+|materiali[sz]\w+|deriv\w+)\b" + _FEW + r"\bonce (?:per|at|and|for|before|instead|rather)\b|\b(?:one|a single) time\b", 1.5),
        (r"\bre-?(?:build|builds|building|built|create[sd]?|creating|ran|run|runs|running|evaluat\w+|deriv\w+|initiali[sz]\w+|generat\w+|validat\w+|simplif\w+|comput\w+)\b", 0.7),
        (r"\b(?:identical|the same|unchanged) (?:across|within|for (?:every|all|each)|in (?:every|each)|between) (?:\w+ )?(?:layers?|steps?|calls?|iterations?|micro-?batches|batches|heads|requests|forwards?|tokens|ranks)\b", 1.5),
        (r"\bstop (?:re-?\w+|recomputing|rebuilding|redoing)\b|\b(?:every|each) (?:layer|call|step|iteration|forward) (?:re-?\w+|rebuilt|recomputed)\b", 1.5),
        (r"\b(?:stored|cached|keyed|memoized|kept) (?:by|on|per) (?:the )?(?:\w+ )?(?:key|shape|expression|signature|input|size|sizes)\b|\bkeyed (?:on|by)\b|\bcache hits?\b", 1.5),
        (r"\bloop[- ]invariant\b|\binvariant\b" + _FEW + r"\b(?:loop|iteration)\b", 2.0),
        (r"\bonly (?:rebuil[dt]|recomput\w+|recreat\w+|regenerat\w+|refresh\w*|updat\w+) (?:it |them )?(?:when|if)\b", 1.5),
        # v3: "once per step, not once per layer"
        (r"\bonce per \w+,? (?:not|instead of|rather than) (?:once )?(?:per|in|for) (?:each |every )?\w+|\b(?:plan|plans|planned|planning|prepar\w+|set(?:s|ting)? up)\b" + _FEW + r"\bonce (?:per|at|and|for|before|instead|rather)\b", 2.0),
    ],
    "copy_avoidance": [
        (r"\b(?:avoid|avoids|avoiding|remove|removes|removing|drop|drops|eliminat\w+|skip|skips|fewer|no|without)\b" + _FEW + r"\b(?:copy|copies|clones?|\.?contiguous(?:\(\))?(?: calls?)?|materiali[sz]\w*)\b", 2.5),
        (r"\bzero-?copy\b|\bno-?copy\b|\bcopy-?free\b", 2.0),
        (r"\bin[- ]?place\b", 2.0),
        (r"\.(?:add|sub|mul|div|clamp|relu|sigmoid|zero|fill|addcmul|addcdiv|lerp|masked_fill|index_add|scatter)_\(", 1.5),
        (r"\bviews? instead\b|\bas a view\b|\breturn(?:s|ing)? a view\b|\buse (?:a )?views?\b|\bas_strided\b", 2.0),
        (r"\bout=|\bout variant\b|\bwrite(?:s)? (?:directly )?into (?:the )?(?:output|out)\b", 1.5),
        (r"\bunnecessary (?:memory )?copy\b|\bextra (?:memory )?cop(?:y|ies)\b|\bintermediate (?:buffer|tensor) cop", 1.5),
        (r"\breturn(?:s|ing)? views\b|\bviews? (?:into|of) (?:the )?\w+|\bnarrow (?:slices?|views?)\b|\bstrided (?:\S+ )?views?\b|\bbroadcast strides\b|\bexpand(?:ed)? view\b", 2.0),
        (r"\b(?:writ\w+|accumulat\w+|stor\w+|scatter\w*|gather\w*|reduc\w+|put|puts|copy|place[sd]?)\b" + _FEW + r"\b(?:directly|straight) into\b|\binto the (?:caller\'s|preallocated|existing|destination) (?:output|buffer|tensor)\b", 2.0),
        (r"\b(?:fresh|separately materiali[sz]ed|materiali[sz]ed|temporary|intermediate) (?:contiguous )?(?:tensors?|buffers?|copy|copies)\b|\bmateriali[sz]\w+\b", 0.8),
        (r"\b(?:as|the) destination\b|\bdestination (?:buffer|tensor)\b", 0.8),
        (r"\bdoes not (?:copy|clone)\b|\bwithout (?:a |an )?(?:extra )?(?:copy|clone|pass over memory)\b|\bextra pass(?: over memory)?\b", 1.5),
    ],
    "precision_specialization": [
        (r"\bfp16\b|\bbf16\b|\bbfloat16\b|\bhalf[- ]precision\b|\bfloat16\b", 0.7),  # v4: 1.0 -> 0.7
        (r"\bmixed[- ]precision\b|\breduced[- ]precision\b|\blow(?:er)?[- ]precision\b", 1.5),
        (r"\btf32\b|\ballow_tf32\b|\bfloat32_matmul_precision\b", 2.0),
        (r"\bint8\b|\bfp8\b|\bint4\b|\bnvfp4\b|\bmxfp\d\b|\bquanti[sz]\w*", 0.7),  # v4: 1.5 -> 0.7
        (r"\bacc(?:umulat\w+)?[_ ](?:type|dtype)\b|\baccumulat\w+ in (?:fp32|float|fp16|half|float32)\b|\bopmath\b", 2.0),
        (r"\bautocast\b|\bamp\b", 1.0),
        (r"\b(?:fp16|bf16|half|bfloat16|fp8|int8)[- ](?:path|specialization|variant|support)\b", 1.0),
        (r"\b(?:in|to|as|into) half\b|\bhalf (?:inputs?|data|tensors?|outputs?)\b", 1.5),
        (r"\be4m3\w*|\be5m2\w*|\bfp4\b|\bnf4\b|\bw4a16\b|\bw8a8\b|\bw8a16\b|\bw4a8\b|\ba8w8\b|\bmxfp\w*|\b(?:4|8|16)-?bits? (?:floats?|integers?|ints?|weights?|values|precision|kv|cache|types?)\b|\bfloat8\w*", 0.7),  # v4: 1.5 -> 0.7
        (r"\bdequant\w*|\bper-(?:channel|tensor|group|head|token) scales?\b", 0.5),  # v4: 1.0 -> 0.5
        (r"\b(?:widen|widens|widened|widening|promot\w+|upcast\w*|downcast\w*)\b" + _FEW + r"\b(?:accumulat\w+|fp32|float32|32 bits|float|dtype|precision|type)\b|\b(?:upcast|downcast)\w*", 1.5),
        (r"\b(?:narrow|reduced|lower|low|input|wider|wide) (?:dtype|type|bit-?width)\b|\bfp32\b|\bfloat32\b|\bdtype\b", 0.5),
        (r"\b(?:accumulator|partial sums?)\b" + _FEW + r"\b(?:fp32|float32|32 bits|float|dtype|type|precision)\b", 1.5),
    ],
    "layout_fast_path": [
        (r"\bfast[- ]?path\b", 2.0),
        (r"\bchannels[_ ]last\b|\bnhwc\b|\bndhwc\b|\bmemory[_ ]format\b", 2.0),
        (r"\b32-?bit index(?:ing| math)?\b|\bcanuse32bitindexmath\b|\bint32 index", 2.0),
        (r"\b(?:special[- ]?case|specialize|specialise)[sd]? (?:for )?(?:the )?(?:contiguous|dense|non-strided|aligned|common)\b", 2.0),
        (r"(?<!non-)\bcontiguous (?:inputs?|case|tensors?|operands?)\b", 1.0),
        (r"\bspecial[- ]?case\b", 0.5),
        (r"\bchannels-last\b|\bnchw\b|\bncdhw\b", 1.5),
        (r"\b(?:dense,? (?:and )?non-?overlapping|non-?overlapping(?:,)? (?:and )?dense)\b|\bflat(?:tened)? (?:1-?d )?(?:loop|kernel|path|index(?:ing)?)\b|\b1-?d (?:loop|kernel)\b", 2.0),
        (r"\bint32 (?:offsets?|indexing|indices|index math)\b|\b32-?bit (?:offsets?|indices|indexing)\b", 2.0),
        (r"\b(?:general|generic|slow) (?:path|route|case|machinery|loop|kernel|implementation)\b|\btensoriterator\b", 0.8),
        (r"\b(?:dedicated|specialized|specialised|specializ\w+|specialis\w+)\b" + _FEW + r"\b(?:kernel|path|loop|layout|inputs?|format)\b", 0.8),
        (r"\b(?:broadcast(?:ing)?|strided|non-?contiguous) (?:or \w+ )?(?:inputs?|operands?|tensors?|cases?) (?:still )?(?:use|take|go|fall|keep)\w*\b", 1.5),
    ],
    "math_simplification": [
        (r"\bfast[- _]?math\b", 2.5),
        (r"\bintrinsics?\b", 2.0),
        (r"\b__expf\b|\b__logf\b|\b__fdividef\b|\brsqrt\b|\bexp2\b|\blog2\b|\b__frcp\w*", 2.0),
        (r"\bstrength reduction\b|\bfastdivmod\b|\bintdivider\b|\bfast (?:integer )?div(?:ision|mod)\b", 2.5),
        (r"\b(?:reciprocal|multiply by (?:the )?inverse|multiplication by (?:the )?inverse|instead of (?:a |the )?(?:division|divide|pow|sqrt|exp))\b", 2.0),
        (r"\bsimplif(?:y|ies|ied|ication)\b" + _FEW + r"\b(?:math|arithmetic|expression|formula|computation|index(?:ing)? math)\b", 2.0),
        (r"\bapproximat\w*|\bfma\b|\bfused multiply-add\b|\bbit[- ]?shifts?\b|\blibdevice\b", 1.5),
        (r"\bpowf?\(|\bpow\b|\bx \* x\b|\binstead of divid\w+|\b(?:dividing|division)\b" + _FEW + r"\bmultipl\w+|\bmultipl\w+\b" + _FEW + r"\binstead of divid\w+", 1.5),
        (r"\bspecial[- ]function (?:unit|instructions?)\b|\bsfu\b|\bmufu\b|\blog2\(e\)|\blog2e\b|\bsingle (?:hardware |special-function )?instruction\b", 1.5),
        (r"\b(?:one|a|two|an extra|fewer|one less) (?:multiply|multiplies|multiplications?|divisions?|divides)\b|\b(?:cube|square) is\b", 1.0),
        (r"\bexp/log\b|\b(?:exp|log|sqrt|tanh|erf|sin|cos)\b" + _FEW + r"\b(?:cheaper|expensive|costly|approximation)\b|\btanh[- ](?:gelu|approximation|formulation)\b", 1.0),
        (r"\bmodulo\b|\bdivmod\b|\binteger division\b|\bshifts? and mask", 0.8),
    ],
    "kernel_fusion": [
        (r"\bfus(?:e|es|ing|ion)\b|(?<!the )(?<!this )(?<!that )\bfused\b", 2.0),
        (r"\b(?:single|one) (?:fused )?kernel\b|\binto one (?:kernel|launch)\b", 1.5),
        (r"\bepilogue\b|\bprologue fusion\b|\bhorizontal(?:ly)? fus", 1.5),
        (r"\b(?:combine|combines|combining|merge|merges|merging)\b" + _FEW + r"\bkernels?\b", 1.5),
        (r"\b_foreach_\w*|\bforeach\b", 1.0),
        (r"\b(?:merge|merges|merging|fold|folds|folding|combine|combines|inline|inlines|move|moves)\b" + _FEW + r"\binto (?:the |a |one |a single )?(?:\w+ )?(?:matmul|gemm|kernel|epilogue|prologue|k loop|main loop)\b", 2.0),
        (r"\bround[- ]trips? (?:through|to|via) (?:global memory|hbm|dram|memory)\b|\b(?:read|reads|reading) (?:it |them )?back (?:from (?:hbm|global memory|dram|memory))?\b|\bwr(?:ote|ites?) (?:an |the |its )?(?:intermediate|output) (?:to|back to) (?:hbm|global memory|dram|memory)\b", 2.0),
        (r"\b(?:act|silu|gelu|relu|swiglu|add|bias|norm|rmsnorm|layernorm|residual|rope|rotary|quant|scale|mul|softmax|dropout)[-_ ](?:and|\+|&)[-_ ](?:mul|multiply|add|norm|rmsnorm|quant\w*|scale|bias|activation|residual|dropout|cast|softmax|rope|rotary)\b", 1.5),
        (r"\b(?:a |one |the )?(?:second|separate|extra|standalone) (?:\w+ )?(?:kernel|launch|pass)\b|\bchain of (?:elementwise |pointwise )?(?:ops|kernels|operations)\b|\btwo (?:separate )?(?:reduction )?kernels\b", 1.5),
        (r"\bmega-?kernel\b|\bupdated together by (?:a |one )?(?:single )?kernel\b|\bin (?:a |one )?single (?:kernel|pass)\b", 1.5),
        (r"\b(?:is|are) never (?:written|materiali[sz]ed|stored)\b|\binside the (?:k[- ]loop|main loop|inner loop|gemm|matmul|mainloop)\b|\b(?:inside|within) the (?:\w+ ){0,3}kernel\b", 1.5),
        (r"\bintermediate\b", 0.5),
    ],
    "vectorization": [
        (r"\bvectori[sz]\w*", 2.5),
        (r"\b(?:vector|wide|wider|128-?bit|64-?bit|packed) (?:memory )?(?:loads?|stores?|accesses|access|reads?|writes?)\b", 2.5),
        (r"\bfloat4\b|\bhalf2\b|\bbfloat162\b|\bfloat2\b|\bvec_size\b|\baligned_vector\b|\bld\.global\.v\d", 2.0),
        (r"\bsimd\b|\bavx2\b|\bavx-?512\b|\bneon\b|\bat::vec\b", 1.5),
        (r"\b(?:two|four|eight|sixteen|2|4|8|16) (?:halves|floats|elements|values|bytes|bf16s?|fp16s?|ints) (?:at a time|per (?:load|access|instruction|thread|iteration|store))\b|\b\d+ bytes per thread\b|\b(?:16|8)-?byte (?:loads?|stores?|accesses|reads?|writes?)\b", 2.0),
        (r"\buint4\b|\bint2\b|\bpacked (?:struct|type|vector|pairs?)\b|\bld(?:g)?\.(?:global\.)?(?:v2|v4|128)\b", 1.5),
        (r"\bscalar (?:loads?|stores?|accesses|access|loop|path|code|fallback|reads?|writes?)\b|\bone (?:byte|element|value) at a time\b", 1.0),
        # v3
        (r"\b(?:read|reads|reading|load|loads|loading|store|stores|storing|write|writes|writing|fetch\w*)\b" + _FEW + r"\bas (?:a |one )?(?:uint4|float4|int4|uint2|float2|int2|half2|bfloat162|128-?bit (?:words?|vectors?))\b", 2.0),
        (r"\b(?:per|each|one) (?:load|store|memory) instruction\b|\bnumber of (?:memory|load|store) instructions\b|\bfewer (?:memory|load|store) instructions\b", 1.5),
    ],
    "memory_coalescing": [
        (r"\bcoalesc\w*|\buncoalesced\b", 3.0),
        (r"\b(?:memory )?access pattern\b", 1.5),
        (r"\bstrided (?:access|loads?|reads?|writes?|stores?)\b|\bstride (?:fix|of \d+ access)\b", 1.5),
        (r"\b(?:adjacent|consecutive|neighbou?ring) threads\b", 1.5),
        (r"\b(?:contiguous|consecutive|adjacent) (?:across|within) (?:a |the |each )?warp\b", 2.0),
        (r"\bcache[- ]line\b|\bsectors?\b|\bmemory transactions?\b", 1.0),
        (r"\b(?:transpos\w+)\b" + _FEW + r"\b(?:first|before|so that|to make|layout)\b", 1.0),
        (r"\b(?:lanes|threads)\b" + _FEW + r"\b(?:read|load|access|touch|write|walk)\w*\b" + _FEW + r"\b(?:consecutive|contiguous|adjacent|neighbou?ring|different|separate)\b", 1.5),
        (r"\bconsecutive (?:addresses|elements|lanes|columns)\b|\bcontiguous (?:\d+-byte )?segments?\b|\b(?:reads?|loads?|writes?) (?:\w+ )?contiguously\b", 1.5),
        (r"\bfastest(?:-varying)? (?:axis|dimension|dim|index)\b|\binnermost (?:dim|dimension|axis)\b|\bstrided by\b", 1.5),
        (r"\b(?:thread|lane)[- ]to[- ](?:element|data|index|row|column)\b|\bremap\w* (?:the )?(?:threads|lanes)\b|\b(?:threads|lanes) (?:were|are|is) mapped\b|\bmapp?(?:ing|ed)? (?:of )?(?:threads|lanes)\b", 2.0),
        (r"\bloop order\b|\bloop interchange\b|\bswap\w* (?:the )?(?:loop|axes|index) order\b|\btranspos\w+ (?:the \w+ )?once so\b|\b(?:different|separate) cache lines?\b", 1.5),
    ],
    "tiling_shared_memory": [
        (r"\bshared[- ]memory\b|\bsmem\b", 2.0),
        (r"\bbank conflicts?\b", 2.5),
        (r"\btil(?:e|es|ed|ing)\b", 1.0),
        (r"\bblock_[mnk]\b", 0.5),
        (r"\bswizzl\w*|\bcp\.async\b|\btma\b|\bldmatrix\b|\bstaged? (?:\w+ )?(?:in|through|into) (?:shared|smem)", 1.5),
        (r"\bon[- ]chip (?:memory|storage|buffers?|sram|scratchpad)\b|\bon chip\b|\bsram\b|\blds\b", 2.0),
        (r"\bcooperatively (?:load|fetch|stage|cop)\w*|\b(?:threads|warps) (?:of|in) (?:a|the|each) (?:thread )?block (?:share|reuse)\b|\b(?:every|each|all) warps? (?:consume|share|reuse)s?\b", 1.5),
        (r"\bblocked (?:im2col|matmul|gemm|conv\w*|algorithm|layout|loops?|transpose)\b|\b(?:its|their) own copy of\b|\bre-?reads? (?:\w+ )?from global memory\b", 1.5),
    ],
    "launch_config_tuning": [
        (r"\bblock[- _]?size\b|\bthreads? per block\b|\bblockdim\b|\bnum_threads\b", 1.5),
        (r"\bgrid[- ]?size\b|\bgrid[- ]stride\b|\bgrid dim\w*\b|\blaunch (?:config\w*|parameters?|geometry|heuristics?)\b", 2.0),
        (r"\bnum_warps\b|\bnum_stages\b|\bnumber of (?:warps|stages|threads|blocks|ctas)\b", 2.0),
        (r"\b(?:more|fewer|larger|smaller|bigger) (?:thread ?)?(?:blocks|threads|warps|ctas|grids?)\b", 1.0),
        (r"\bwaves?\b|\btail effect\b", 0.5),
        (r"\b\d+-thread blocks?\b|\b\d+ warps\b|\bblock dim(?:ension)?s?\b|\bthreads instead of\b", 1.5),
        (r"\b\d+[- ]threads?\b", 0.9),
        (r"\b(?:one|a|single) (?:thread ?block|block|warp|cta) per (?:row|column|token|head|sequence|element|sm|expert|batch)\b|\b(?:block|warp|cta)s? per row\b", 2.0),
        (r"\bsm count\b|\bmultiprocessorcount\b|\bnumber of sms\b|\bnum_sms\b|\bpersistent(?:-style)? (?:kernel|launch|grid|blocks?)\b|\bceil\(\s*\w+\s*/\s*\d+\s*\)", 1.5),
        (r"\b(?:size|sizes|sizing|pick|picks|choose|chooses|raise|raises|raising|lower|lowers|lowering|shrink|cap|caps|reduce)\b" + _FEW + r"\b(?:the )?(?:grid|block(?: dimension)?|launch)\b|\bidle threads\b|\bthreads? idle\b", 0.8),
    ],
    "occupancy_control": [
        (r"\boccupancy\b", 2.0),
        (r"\bregister (?:pressure|usage|count|spill\w*|file|limit)\b|\bregisters per thread\b", 2.0),
        (r"\bspill\w*\b", 1.5),
        (r"(?<![a-z])launch[_ ]bounds(?![a-z])|\bmaxrregcount\b|\bmaxnreg\b|\bminblockspermultiprocessor\b", 3.0),
        (r"(?<!in )\bregisters\b", 0.8),
        (r"\bvgprs?\b|\bsgprs?\b|\bagprs?\b|\bwaves per (?:simd|eu|cu)\b|\bwaves_per_eu\b", 2.0),
        (r"\b(?:cap|caps|capped|capping|limit|limits|limited|limiting|restrict\w*|bound|reduce|reduces|cut|lower)\b" + _FEW + r"\bregisters?\b|\b\d+ (?:registers|vgprs)\b", 2.0),
        (r"\b(?:ctas?|blocks|waves|warps|thread ?blocks)\b" + _FEW + r"\b(?:fit|fits|resident) (?:per|on (?:an?|each)) (?:sm|cu|simd|multiprocessor)\b|\bresident (?:blocks|warps|waves|ctas)\b|\blocal memory\b", 1.5),
    ],
    "warp_level_reduction": [
        (r"\bwarp[- ](?:level |wide )?(?:shuffles?|reduce|reductions?|primitives?|intrinsics?)\b|(?:\b|__)shfl\w*", 3.0),
        (r"\bblock[- _]?reduce\b|\bblockreduce\b|\bwarpreduce\b|\bcub::\w*reduce\b", 2.5),
        (r"\bsplit-?k\b|\bsplitk\b|\bsplit-?kv?\b|\bstream-?k\b", 2.5),
        (r"\b(?:tree|parallel|hierarchical|cooperative) reduction\b|\breduction (?:across|within) (?:a |the )?(?:warp|block)\b", 2.0),
        (r"\bsplit\w*\b" + _FEW + r"\bacross (?:ctas|blocks|thread ?blocks|sms|warps)\b|\bpartial (?:softmax|sums?|results?|reductions?|outputs?)\b" , 1.5),
        (r"\breduction\b|\breduce\b", 0.5),
        (r"\bbutterfly\b|\blane ?\^|\blane ?xor\b|\bxor (?:shuffle|swap|exchange)\b|\bdpp\b|\bacross lanes\b|\b(?:exchang|swap)\w* (?:its |their )?(?:partial \w+|values?) with (?:lane|neighbou?r)", 2.0),
        (r"\b(?:two|multi)-?level reduction\b|\b(?:final|second) (?:pass|kernel) (?:reduces|sums|adds|combines)\b|\bblock results\b", 2.0),
        (r"\bsplit(?:ting|s)?\b" + _FEW + r"\b(?:k|reduction|contraction) (?:dimension|dim|axis)\b|\breduction (?:dimension|axis|dim) into\b", 2.0),
    ],
    "atomic_contention_avoidance": [
        (r"\batomics?\b|\batomicadd\b|\batomic(?:ally| add| operations?| updates?)\b", 2.0),
        (r"\bprivati[sz]\w*", 2.5),
        (r"\bcontention\b", 1.5),
        (r"\b(?:per-block|per-warp|block-local|warp-local|private|local) (?:histograms?|accumulators?|partial sums|bins|counters)\b", 2.0),
        (r"\bwithout atomics\b|\bno atomics\b|\batomic-free\b|\b(?:instead of|fewer|avoid\w*|remov\w+) (?:\w+ )?atomic", 1.5),
        (r"\b(?:private|per-block|per-warp|per-thread|local) (?:copy|copies|counters?|histograms?|bins|buffers?)\b", 1.5),
        (r"\bhistograms?\b", 0.7),
        (r"\b(?:increment|updat|add|accumulat|writ)\w*\b" + _FEW + r"\b(?:the )?same (?:global )?(?:counters?|rows?|addresses|address|bins?|locations?|memory|entries|slots?)\b|\bconflicting (?:updates|writes|adds)\b|\bhot (?:rows|counters|bins|addresses)\b", 2.0),
        (r"\b(?:updat|writ|increment)\w*\b" + _FEW + r"\bconcurrently\b", 2.0),
    ],
    "autotuning": [
        (r"\bauto-?tun\w*", 3.0),
        (r"\bmax-autotune\b|\bcudnn\.benchmark\b|\bcudnn benchmark\b|\btunableop\b|\bcoordinate[- ]descent tuning\b", 3.0),
        (r"\b(?:search|sweep|benchmark|try|tries|trying)\w*\b" + _FEW + r"\b(?:configs?|configurations|candidates|tile sizes|algorithms)\b", 1.5),
        # v3
        (r"\b(?:try|tries|trying|tried|time|times|timing|benchmark\w*|search\w*|sweep\w*|profil\w+)\b" + _FEW + r"\b(?:every|each|all|several|multiple|the available|available) (?:available |candidate |supported )?(?:\S+ )?(?:configs?|configurations|algorithms?|algos|kernels|variants|candidates|tile sizes|block sizes|tactics)\b", 2.0),
        (r"\bpick(?:s|ing)? (?:its|their) own (?:configs?|configurations|parameters|block sizes?|tile sizes?)\b|\b(?:per|for each|for every|once per) (?:new )?(?:input|problem) shapes?\b", 1.5),
        (r"\btun(?:ed|ing) (?:configs?|configurations|table|cache|database|results)\b", 1.5),
        (r"\btun(?:e|es|ed|ing)\b" + _FEW + r"\b(?:configs?|configurations|parameters|params)\b", 2.0),
        (r"\b(?:remember|cache|store|pick|picks|keep)s? the (?:winner|fastest|best (?:config|configuration|algorithm))\b", 1.5),
        (r"\b(?:time|times|timed|timing|profil\w+|measur\w+)\b" + _FEW + r"\b(?:configs?|configurations|candidates|block sizes|tile sizes|algorithms?|variants|choices)\b|\b(?:configs?|candidates|algorithms?|variants) (?:is |are )?(?:timed|benchmarked|profiled)\b", 1.5),
        (r"\b(?:fastest|best|winner|winning)\b" + _FEW + r"\b(?:is |gets |are )?(?:cached|picked|chosen|selected|persisted|remembered|stored|kept|saved)\b|\bthe winner\b", 1.5),
        (r"\bexhaustive search\b|\bbenchmark mode\b|\bby timing\b|\bsearch space\b|\bheuristic search\b", 1.5),
        (r"\bsweep\w*", 0.7),
    ],
    "vendor_library_dispatch": [
        (r"\bcublas(?:lt)?\b|\bcudnn\b|\bcutlass\b|\bcusparse(?:lt)?\b|\bcufft\b|\bcusolver\b|\bmagma\b|\bhipblas(?:lt)?\b|\brocblas\b|\bmiopen\b|\bonednn\b|\bmkldnn\b|\bmkl\b|\bcutedsl\b|\bcute\b", 2.0),
        (r"\bflash[- _]?attn\b|\bflash[- ]?attention\b|\bflashinfer\b|\bxformers\b|\bmemory[- ]efficient attention\b|\bcudnn attention\b|\bsdpa\b|\bscaled_dot_product_attention\b", 2.0),
        (r"\b(?:dispatch|route|routes|routing|fall ?back|call|calls|use|uses)\b" + _FEW + r"\b(?:vendor|library|libraries|library kernels?|gemm library)\b", 1.5),
        (r"\bcomposable[_ ]kernel\b|\bthrust\b|\bcub\b", 1.0),
        (r"\bfa[234]\b|\bfav[23]\b|\bflash-?decoding\b|\bvendor\b|\bspmm\b|\bgemm library\b|\bcublaslt\b|\bthird-party (?:kernels?|library)\b|\bmarlin\b|\bmachete\b|\bdeepgemm\b|\btriton kernels? from\b", 1.5),
        (r"\b(?:hand-?written|in-?tree|in-?house|our own|native|custom) (?:kernels?|implementation|path)\b", 0.7),
        (r"\b(?:dispatch\w*|rout(?:e|es|ed|ing)|send|sends|sent|hand(?:s|ed)? off|redirect\w*)\b" + _FEW + r"\bto (?:the )?(?:\w+ )?(?:kernels?|backend|library|implementation)\b", 1.0),
        # v3: a dispatch verb with a library name
        (r"\b(?:route[sd]?|routing|dispatch\w*|call|calls|calling|send|sends|sent|switch\w*|hand\w*|offload\w*|delegat\w+|go(?:es)?)\b" + _FEW + r"\b(?:to|into|through|via|the) (?:the )?(?:cublas(?:lt)?|cudnn|cutlass|cusparse(?:lt)?|cufft|cusolver|hipblas(?:lt)?|rocblas|miopen|onednn|mkldnn|mkl|flashinfer|flash[- _]?attn|flash[- ]?attention|xformers|marlin|machete|deepgemm)\b", 1.5),
    ],
    "host_sync_elimination": [
        (r"\b(?:remove|removes|removed|removing|avoid|avoids|avoiding|eliminat\w+|drop|drops|skip|skips|reduce|reduces|fewer|no|unnecessary|implicit|blocking|hidden|extra|get rid of)\b" + _FEW + r"\b(?:sync|syncs|synchroni[sz]\w*)\b", 3.0),
        (r"\b(?:gpu|cpu|host|device)\s*(?:<->|->|→|-|to)\s*(?:gpu|cpu|host|device)\s*sync\w*", 3.0),
        (r"\.item\(\)|\.tolist\(\)|\bitem\(\) calls?\b", 2.0),
        (r"\bnon[_-]blocking\b", 1.0),
        (r"\bnonzero\(\)", 1.0),
        (r"\bblock(?:s|ed|ing)? the (?:host|cpu|stream|python thread)\b|\b(?:no longer|never|not|doesn't|does not|don't) (?:have to |need to )?wait\w* (?:for|on) (?:the )?(?:gpu|device|kernels?)\b|\bback to the (?:host|cpu)\b", 2.0),
        (r"\bsync(?:hroni[sz]\w*)?\b|\bcuda(?:stream|device|event)synchronize\b", 0.8),
        (r"\bsync[- ]free\b|\bsyncless\b|\bwithout (?:a )?(?:host |cpu )?sync\w*", 2.5),
        (r"\bstall\w* (?:the )?(?:cpu|host|python)\b|\b(?:host|cpu|python) (?:to |must |has to |would |had to )?wait\w* (?:for|on) (?:the )?(?:gpu|device|kernels?)\b|\bwait for the gpu\b", 2.0),
        (r"\b(?:pull\w*|read\w*|bring\w*|fetch\w*|copy\w*|cop(?:ied|ies))\b" + _FEW + r"\bback to (?:python|the host|the cpu|host|cpu)\b|\bblocking (?:read|call|copy|transfer|\.item)\w*", 2.0),
        (r"\bdata-dependent (?:shapes?|lengths?|sizes?|outputs?|control flow|indexing)\b|\bpython control flow\b", 1.5),
        # v3: a flag, check or scalar kept on the device is one the host no longer reads
        (r"\bkeep(?:s|ing)?\b(?:[^.\n]|\.(?=\S)){0,30}?\b(?:flags?|checks?|booleans?|bools?|scalars?|conditions?|counts?|found_inf|overflow\w*|norms?|predicates?|decisions?)\b (?:on|in) (?:the )?(?:device|gpu)\b|\b(?:decision|check|branch|condition)\w*\b" + _FEW + r"\b(?:made|done|evaluated|computed|taken) (?:with \S+ )?on (?:the )?(?:device|gpu)\b|\b(?:read|copied|pulled|synced) back only\b", 4.0),
    ],
    "stream_concurrency": [
        (r"\b(?:side|separate|secondary|dedicated|multiple|another|second|copy|compute) streams?\b|\bstreams\b|\bmulti-?stream\b", 2.5),
        (r"\bstream\b", 1.0),
        (r"\boverlap\w*", 2.0),
        (r"\bconcurren\w+|\bin parallel with\b", 1.5),
        (r"\bprefetch\w*", 2.0),
        (r"\bpin(?:ned)?[_ ]memory\b|\bpage-?locked\b", 1.5),
        (r"\bdouble[- ]buffer\w*|\bpipelin\w+ (?:the )?(?:copies|copy|transfers?|communication|loading|h2d|data)\b|\basync(?:hronous)? (?:h2d|copy|copies|transfer|loading|prefetch)\b", 1.5),
        (r"\b(?:hid(?:e|es|ing)|hidden)\b" + _FEW + r"\bbehind\b|\bin the background\b|\bat the same time as\b|\balongside\b", 1.5),
        (r"\bwhile (?:the )?(?:gpu|device|current|compute|kernel|previous|model|backward|forward|other|main)\b", 1.5),
        (r"\b(?:own|separate|dedicated|second) (?:queue|copy engine|command queue)\b", 1.5),
        (r"\bwaits? (?:only )?(?:on|for) (?:an|the|a) (?:cuda )?event\b|\bahead of time\b", 0.9),
        (r"\b(?:load|fetch|copy|swap|upload|read)\w*(?:-in)?\b" + _FEW + r"\bnext (?:layer|batch|chunk|block|step|micro-?batch)\w*", 1.5),
    ],
    "launch_overhead_reduction": [
        (r"\bcuda[- ]?graphs?\b|\bcudagraphs?\b|\bgraph capture\b|\bcaptur\w+\b" + _FEW + r"\bgraph\b|\breduce-overhead\b", 3.0),
        (r"\blaunch(?:es)? overhead\b|\bkernel launch overhead\b", 2.5),
        (r"\b(?:fewer|less|reduce|reduces|reducing|number of|many small|too many|avoid)\b" + _FEW + r"\b(?:kernel )?launch(?:es)?\b", 2.0),
        (r"\bmulti[_ ]tensor[_ ]apply\b|\bmulti-tensor\b", 2.5),
        (r"\bbatch(?:ed|es|ing)?\b" + _FEW + r"\b(?:launches|kernel launches|small kernels|kernels)\b", 1.5),
        (r"\b(?:python|dispatch|dispatcher|framework) overhead\b", 1.0),
        (r"\b(?:cpu|host) overhead\b", 0.5),  # v4: 1.0 -> 0.5; on real PRs CPU overhead is mostly cut by caching
        (r"\brecorded graph\b|\bgraph replay\b|\breplay\w* (?:the |a |it as a )?(?:recorded |captured |whole )?(?:\w+ )?graphs?\b", 2.5),
        (r"\breplay\w*\b", 0.9),
        (r"\b(?:cut|cuts|cutting|trim|trims|fewer|save|saves)\b" + _FEW + r"\blaunch(?:es)?\b|\b(?:one|a single|single) launch\b|\bin one launch\b", 2.0),
        (r"\bper-kernel (?:cpu )?(?:dispatch|launch|overhead)\b|\bcpu dispatch\b|\blaunch latency\b|\bkernel launches dominat\w+\b", 2.0),
        (r"\b(?:one|a) (?:small )?kernel per (?:parameter|tensor|param|layer|expert)\b|\btensor[- ]lists?\b|\bkernels? per (?:step|iteration|parameter|tensor)\b|\b\d+ (?:small )?(?:kernels|launches)\b", 1.5),
    ],
    "allocator_reuse": [
        (r"\bworkspaces?\b", 2.0),
        (r"\bcaching allocator\b|\bexpandable[_ ]segments\b|\bcudamalloc\w*\b|\bmem(?:ory)? ?pools?\b|\bmempool\b|\bpytorch_cuda_alloc_conf\b", 3.0),
        (r"\ballocat\w+", 0.9),
        (r"\b(?:reuse|reuses|reusing|recycle|recycling)\b" + _FEW + r"\b(?:buffers?|memory|workspace|allocations?|storage|tensors?)\b", 2.0),
        (r"\bpre-?allocat\w+|\bfragmentation\b|\bempty_cache\b", 2.0),
        (r"\bscratch (?:space|buffers?|memory|pad)\b|\b(?:persistent|preallocated|pre-allocated|pooled|cached) (?:scratch )?buffers?\b|\b(?:buffer|tensor|block) pools?\b|\bfree ?list\b", 2.0),
        (r"\ballocat\w+ and free\w*|\bmalloc\w*|\bsized once\b|\bsized for the largest\b", 1.5),
        # v3
        (r"\bpooled\b|\bpool(?:s|ed|ing)? (?:by|per) size\b|\bfree\w* and (?:re-?)?allocat\w+|\ballocated again\b|\bre-?allocat\w+|\bno (?:new )?(?:device )?allocations?\b", 1.5),
        (r"\bkeep\w*\b" + _FEW + r"\b(?:buffers?|workspaces?|allocations?|storage|memory)\b" + _FEW + r"\balive\b", 2.0),
    ],
    "transfer_reduction": [
        (r"\b(?:host|cpu)\s*(?:-|->|→|to)\s*(?:device|gpu)\b|\b(?:device|gpu)\s*(?:-|->|→|to)\s*(?:host|cpu)\b|\bh2d\b|\bd2h\b|\bhtod\b|\bdtoh\b", 1.5),
        (r"\bmemcpy\w*", 1.5),
        (r"\bkeep(?:s|ing)?\b" + _FEW + r"\bon (?:the )?(?:device|gpu)\b|\bstay(?:s)? on (?:the )?(?:device|gpu)\b", 2.5),
        (r"\b(?:fewer|avoid|avoids|avoiding|reduce|reduces|remove|removes|unnecessary|redundant|extra)\b" + _FEW + r"\b(?:transfers?|round[- ]?trips?|copies to (?:the )?(?:host|cpu|device|gpu)|pcie)\b", 2.5),
        (r"\btransfers?\b|\bpcie\b|\bdata movement\b", 1.0),
        (r"\b(?:mov|copy|copi|upload|download|send|sent|transferr?|bring|brought|ship)\w*\b" + _FEW + r"\b(?:to|from|back to) (?:the )?(?:cpu|host|gpu|device)\b|\bcopied back\b", 2.0),
        (r"\b(?:device|gpu)-resident\b|\bresident on (?:the )?(?:gpu|device)\b|\b(?:directly|entirely) on (?:the )?(?:gpu|device)\b|\b(?:over|across) (?:the )?pcie\b", 2.0),
        (r"\b(?:build|built|builds|comput\w+|derive[sd]?|creat\w+|construct\w*|do|does|run|runs|filter\w*|assembl\w+|generat\w+)\b" + _FEW + r"\bon (?:the )?(?:gpu|device) (?:instead|rather)\b|\b(?:now|stays?|remains?) on (?:the )?(?:gpu|device)\b", 1.5),
        (r"\bcpu tensors?\b|\bnumpy\b|\bhost (?:tensors?|buffers?|lists?|arrays?)\b|\bupload\w*\b|\bon (?:the )?(?:device|gpu)\b", 0.7),
        # v3
        (r"\b(?:build|built|builds|building|comput\w+|derive[sd]?|deriving|creat\w+|construct\w*|generat\w+|assembl\w+|mak\w+)\b" + _FEW + r"\bon (?:the )?(?:gpu|device)\b|\.to\(\s*[\"']?cuda|\.cuda\(\)", 1.5),
    ],
    "build_configuration": [
        (r"\btorch_cuda_arch_list\b|\bcmake_cuda_architectures\b|\barch(?:itecture)? list\b|\bcuda arch\w*\b|\bgencode\b|\bfatbin\b", 2.5),
        (r"\bsm_?\d{2,3}a?\b|\bcompute_\d{2,3}a?\b", 1.0),
        (r"\bcompiler (?:flags?|options?)\b|\bcompile (?:flags?|options?)\b|\bbuild (?:flags?|options?|config\w*|type)\b|\bnvcc\b|\bcmake\b|\bccache\b", 2.0),
        (r"(?<![\w-])-o[23s]\b|\blto\b|\blink[- ]time optimi[sz]ation\b|-xptxas\b|-march=\w+", 2.0),
        (r"\bjit caches?\b|\bcompil\w+ caches?\b|\bkernel caches?\b|\bptx\b|\btriton_cache_dir\b|\b(?:inductor|fx graph|triton) caches?\b", 1.5),
        (r"\brelease build\b|\bdebug build\b|\bbuild system\b", 1.0),
        (r"\bptxas\b", 1.0),
        (r"\b(?:[5-9]|1[0-2])\.\d ?a?(?:[,;]| and) ?(?:[5-9]|1[0-2])\.\d\b|\bcompute capabilit(?:y|ies)\b|\bsm_?\d{2,3}[af]?\b" + _FEW + r"\bsm_?\d{2,3}[af]?\b", 1.5),
        (r"\b(?:wheel|binary|library) size\b|\bbuild time\b|\bcompile time of the (?:extension|kernels)\b", 1.0),
        (r"\barchs\b|\barch\b|\bwheels?\b", 0.7),
        (r"(?<![\w-])-g\b|(?<![\w-])-lineinfo\b|\bdevice debug\b|\bdebug info\b|\brelocatable device code\b|\b-?rdc\b|\bndebug\b|\bdebug symbols\b", 1.5),
    ],
}

# Rules v4: written from the errors on `real-train` of evaluation/intent_real.jsonl (real merged
# pull requests; the blind `real-test` split was not read). Real titles name the data type a
# kernel works on without changing it ("Fuse pre-swizzling into grouped MXFP8 quantization"),
# so a dtype word alone is context (weights above lowered to < 1.0); these phrases say that a
# change introduces or switches to a precision, caches, skips work, picks launch
# parameters, writes into caller buffers, and so on.
_DTYPE = r"(?:fp16|f16|bf16|bfloat16|half|fp8|int8|int4|fp4|nvfp4|mxfp[48]|tf32|float16|low(?:er)?[- ]precision|reduced[- ]precision)"
_V4_TEXT: dict[str, list[tuple[str, float]]] = {
    "precision_specialization": [
        (r"\b(?:use|uses|using|in|to|as|with|enable\w*|add\w*|support\w*|allow\w*|switch\w* to|keep\w*|store\w*)\s+(?:an?\s+|the\s+)?" + _DTYPE + r"\b", 1.5),
        (r"\b" + _DTYPE + r"[- ](?:support|path|variant|kernels?|outputs?|states?|optimizer|momentums?|all-?reduce|communication|partials?|partial outputs?|data ?types?|dtype|master weights|accumulat\w+|inputs?|compute)\b", 1.5),
        (r"\baccum(?:ulation)?[_ ]?dtype\b|\baccumulat\w+ (?:type|dtype|precision)\b|\binternal precision\b|\bprecision output\b", 2.0),
    ],
    "redundancy_elimination": [
        (r"(?<!kv )(?<!kv-)(?<!l2 )(?<!disk )(?<!jit )(?<!compile )(?<!compilation )\bcach(?:e|es|ed|ing)\b(?! (?:dir\w*|lines?|hit rate|keys?|size|dir|files?|misses))", 1.5),
        (r"\b(?:unnecessary|redundant|unneeded|needless|superfluous|dead)\b", 1.0),
        (r"\bskip(?:s|ped|ping)?\b|\bnot (?:needed|required|necessary)\b|\bno \w+ (?:is )?(?:needed|required)\b|\bonly when (?:needed|required|necessary)\b|\bif not needed\b|\bwhen not needed\b", 1.0),
        (r"\b(?:query|queries|call|calls|lookup|lookups)\b" + _FEW + r"\b(?:every|each|per)[- ](?:call|invocation|step|forward|launch)\b|\bper-call (?:overhead|cost)\b|\bon every (?:call|invocation|forward|step)\b", 1.5),
        (r"\b(?:fewer|reduce\w*|avoid\w*|remov\w+)\b" + _FEW + r"\b(?:driver|api|runtime) calls\b|\bfrom (?:`?forward`?|the forward) to (?:`?__init__`?|the constructor|init)\b", 2.0),
    ],
    "copy_avoidance": [
        (r"\b(?:caller|user)[- ](?:provided|owned|supplied|allocated)\b|\b(?:write|writes|writing|written)\b" + _FEW + r"\b(?:into|to) (?:the )?(?:caller'?s?|user'?s?|provided|given|existing) (?:output|buffers?|tensors?)\b", 2.0),
        (r"\b(?:as|into) (?:tensor )?views?\b|\bviews? (?:of|into) (?:one|a single|the same) buffer\b|\b(?:padding|temporary|intermediate) copy\b|\bd2d cop(?:y|ies)\b|\bdevice-to-device cop(?:y|ies)\b", 1.5),
    ],
    "launch_config_tuning": [
        (r"\b(?:kernel|launch|triton|moe|gemm|block|tile) configs?\b|\btuned (?:\w+ ){0,3}(?:configs?|launchers?|kernels?)\b|\bconfig(?:s|uration)? (?:files?|table) for\b", 1.5),
        (r"\bnum(?:ber of)? blocks\b|\bwarp layout\b|\bwarps? per (?:block|cta|row)\b|\b\d+[- ]stages?\b|\bstages? (?:tier|count)\b|\bpipeline depth\b|\bpersistent\b", 1.5),
        (r"\b(?:block|tile)[-_ ]?size[-_ ]?[mnk]\b|\bblock_size_[mnk]\b|\bblock sizes?\b", 1.0),
    ],
    "warp_level_reduction": [
        (r"\bwarp (?:functions?|primitives?|intrinsics?|reduce|sums?|allreduce)\b|\bwarp-(?:level|wide)\b|\bredux\b", 2.0),
    ],
    "transfer_reduction": [
        (r"\b(?:in|into) vram\b|\bfull gpu acceleration\b|\b(?:directly|straight) on (?:the )?(?:gpu|device)\b|\bconstruct\w* (?:tensors? )?(?:directly )?on (?:the )?(?:gpus?|devices?)\b", 2.0),
        (r"\bmemcpy\w*\b|\bh2d\b|\bd2h\b|\bhost[- ](?:to|and)[- ]device\b|\bdevice[- ]to[- ]host\b|\bcpu[- ]?(?:->|to)[- ]?gpu\b|\bgpu[- ]?(?:->|to)[- ]?cpu\b", 1.5),
    ],
    "allocator_reuse": [
        (r"\bmemory[- ]caching\b|\bcaching (?:device |cuda |gpu )?allocators?\b|\b(?:bulk|pre)[- ]?allocat\w+\b|\bpreallocat\w+\b|\ballocators?\b|\bbuffer (?:pool|reuse|caching)\b|\breuse (?:the )?(?:buffers?|workspaces?|storage|memory)\b", 1.5),
        (r"\bcudamalloc\w*\b|\bcudafree\b|\b(?:allocat\w+|malloc)\b" + _FEW + r"\b(?:per|every|each) (?:call|step|launch|invocation|iteration)\b", 1.5),
    ],
    "build_configuration": [
        (r"\b(?:compile|compilation|build) times?\b|\bdisk cache\b|\bjit[- ]?cache\b|\bcompile cache\b|\bgencode\b|\barchitecture list\b|\btorch_cuda_arch_list\b", 2.0),
        (r"\b(?:compiler|compile|build|nvcc|optimi[sz]ation) flags?\b|\bbinary size\b|\bdebug info\b|\btranslation units?\b", 1.5),
    ],
    "memory_coalescing": [
        (r"\baccess patterns?\b|\bsequential(?:ly)? (?:access|reads|writes)\b|\brearrang\w+ (?:the )?dimensions\b|\buncoalesced\b", 1.5),
    ],
    "math_simplification": [
        (r"\b(?:fold|folds|folding|folded)\b" + _FEW + r"\b(?:reciprocal|constant|scale|division|divide)\w*\b|\bexp2f?\b|\bex2\b|\b__expf\b|\bfast exponentials?\b", 2.0),
    ],
    "kernel_fusion": [
        (r"\b(?:fuse|fuses|fused|fusing|fusion)\b" + _FEW + r"\binto\b", 1.0),
    ],
    "stream_concurrency": [
        (r"\boverlap\w*\b" + _FEW + r"\b(?:comm\w*|all-?gather|reduce-?scatter|all-?reduce|all-?to-?all|compute|computation|gemms?|matmuls?|copies|transfers?)\b|\bprefetch\w*\b", 2.0),
    ],
    "autotuning": [
        (r"\bautotune[rd]?\b|\bauto-tuner\b|\btactics?\b", 1.0),
    ],
    "host_sync_elimination": [
        (r"(?<![\w.])item\(\)|(?<![\w.])tolist\(\)", 2.0),
    ],
    "occupancy_control": [
        (r"\bregister (?:amount|allocation|budget|split|count)s?\b|\bsetmaxnreg\b|\breg_(?:alloc|dealloc)\b", 2.0),
    ],
}
_V4_TEXT["transfer_reduction"].append((r"\.cpu\(\)|\bcpu\(\) calls?\b|\.numpy\(\)", 1.5))
_V4_TEXT["stream_concurrency"].append(
    (r"\b(?:side|separate|dedicated|compute|communication|comm|copy|low[- ]priority|high[- ]priority)[_ ]streams?\b", 2.0))
_V4_TEXT["warp_level_reduction"].append((r"\bsplit (?:kv|k)\b", 2.5))
_V4_TEXT["launch_config_tuning"].append((r"\bstages?\s*=\s*\d+\b|\b(?:block|warp|thread|grid) (?:and (?:block|warp|thread) )?sizes\b", 1.5))
for _strategy, _extra in _V4_TEXT.items():
    _TEXT[_strategy] = _TEXT[_strategy] + _extra

# Rules v5 (issue 34): the label conventions of evaluation/README_intent.md. C1: choosing the
# number of splits, the split heuristic or when a split path is taken is launch_config_tuning
# (introducing split-K stays warp_level_reduction); these outweigh the bare "split-k" (2.5).
_TEXT["launch_config_tuning"] += [
    (r"\b(?:split-?kv?|splitk|kv[- ]splits?|splits?)\b" + _FEW + r"\b(?:heuristics?|counts?|factors?|selection|choice|"
     r"thresholds?|dispatch conditions?)\b|\b(?:heuristics?|number|count|choice|selection) (?:of|for) (?:the )?(?:kv |k )?"
     r"splits?\b|\b(?:choos|select|pick|tun)\w* (?:the )?(?:number of )?(?:kv |k )?splits?\b", 3.0),
    (r"\b(?:enable|use|re-?enable)\w*\s+split[-_ ]?kv?\b" + _FEW + r"\b(?:when|whenever|more often|only (?:for|when|below|above))\b",
     3.0),
]

_CODE: dict[str, list[tuple[str, float, float, float]]] = {
    # (pattern, weight, added factor, removed factor)
    "algorithm_replacement": [
        (r"cub::Device(?:Radix)?Sort|cub::DeviceScan|cub::DeviceSegmented\w+|thrust::sort|torch\.searchsorted|\bsearchsorted\(|\bbisect\.", 1.5, 1.0, 0.3),
        (r"\bwelford\w*|\bWelford\w*|online_softmax", 1.0, 1.0, 0.3),
    ],
    "redundancy_elimination": [
        (r"@(?:functools\.)?(?:lru_cache|cache)\b|functools\.cache\b|@cached_property", 2.0, 1.0, 0.2),
        (r"\b_cache\[|\bcache\.get\(|self\._cached_\w+|\b\w+_cache\s*=\s*\{\}|\bprecomputed_\w+", 1.0, 1.0, 0.2),
    ],
    "copy_avoidance": [
        (r"\.contiguous\(\)", 1.5, 0.2, 1.0),
        (r"\.clone\(\)|\.copy\(\)|torch\.clone\(", 1.5, 0.2, 1.0),
        (r"\bout\s*=\s*\w", 1.5, 1.0, 0.2),
        (r"\.(?:add|sub|mul|div|clamp|relu|sigmoid|tanh|zero|fill|addcmul|addcdiv|exp|masked_fill|index_add|scatter|lerp|neg|abs|sqrt)_\(", 1.5, 1.0, 0.2),
        (r"\.(?:view|as_strided|expand|unsqueeze|narrow)\(", 0.5, 1.0, 0.2),
    ],
    "precision_specialization": [
        (r"\.half\(\)|\.bfloat16\(\)|\.to\(\s*(?:dtype\s*=\s*)?torch\.(?:float16|half|bfloat16|float8_\w+)\s*\)", 1.5, 1.0, 0.5),  # v4: a cast
        (r"torch\.(?:float16|half|bfloat16|float8_\w+|int8)\b|\b__half\b|\b__nv_bfloat16\b|at::Half\b|at::BFloat16\b|\bc10::Half\b|kHalf\b|kBFloat16\b", 0.8, 1.0, 0.5),  # v4: 1.5 -> 0.8 (dtype names are context)
        (r"\ballow_tf32\b|set_float32_matmul_precision|\bacc_type\b|\bopmath_t\b|\bopmath_type\b|\baccscalar_t\b|autocast\b|tl\.float16|tl\.bfloat16", 2.0, 1.0, 0.5),
        (r"__nv_fp8\w*|float8_e[45]m[23]\w*|Float8_e[45]m[23]\w*|tl\.float8\w*|\bfp8_e[45]m[23]\w*|\b__nv_fp4\w*|tl\.bfloat16|\.to\(tl\.float32\)", 0.8, 1.0, 0.5),  # v4: 2.0 -> 0.8
    ],
    "layout_fast_path": [
        (r"\bchannels_last\b|ChannelsLast|MemoryFormat::|suggest_memory_format\(|memory_format\s*=", 2.0, 1.0, 0.5),
        (r"canUse32BitIndexMath|can_use_32bit_index|use_32bit_index", 2.5, 1.0, 0.5),
        (r"\b\w*fast_path\w*|\b\w*FastPath\w*", 2.0, 1.0, 0.3),
        (r"\.is_contiguous\(|is_non_overlapping_and_dense\(", 0.7, 1.0, 0.3),
    ],
    "math_simplification": [
        (r"\b__(?:expf|logf|fdividef|frcp_\w+|fsqrt_\w+|powf|sinf|cosf|tanf|exp10f|fmaf_\w+|fmul_\w+|frsqrt_\w+)\b|\brsqrtf?\(|\bexp2f?\(|tl\.math\.\w+|libdevice\.\w+|\bfast_(?:exp|tanh|gelu)\w*", 2.5, 1.0, 0.3),
        (r"use_fast_math|-ffast-math|IntDivider|FastDivmod|\bfmaf?\(", 2.5, 1.0, 0.3),
        (r"torch\.rsqrt|\.rsqrt\(|\breciprocal\(", 1.5, 1.0, 0.3),
        (r"\btl\.exp2\b|\bLOG2E\b|\bM_LOG2E\b|\blog2e\b|\bh2?exp2\b|\bh2?rsqrt\b|__builtin_amdgcn_(?:exp2|rcp|rsq)\w*", 2.5, 1.0, 0.3),
        (r"\bpowf?\(|torch\.pow\(|\*\* ?[23]\b", 1.0, 0.3, 1.0),
    ],
    "kernel_fusion": [
        (r"\bfused\s*=\s*True", 2.5, 1.0, 0.3),
        (r"\btorch\.compile\(|@torch\.compile\b", 1.5, 1.0, 0.3),   # v5 (C11): inductor fuses what it compiles
        (r"\bfused_\w+|\b\w+_fused\b|\bFused[A-Z]\w*|triton_\w*fused\w*", 1.2, 1.0, 0.3),  # v4: names of existing fused ops are context
        (r"torch\._foreach_\w+|\b_foreach_\w+", 2.0, 1.0, 0.3),
        (r"\bepilogue\w*|\bEpilogue\w*", 1.5, 1.0, 0.3),
    ],
    "vectorization": [
        (r"\baligned_vector\b|\bvec_size\b|\bVEC_SIZE\b|\bkVecSize\b|can_vectorize_up_to|vectorized_elementwise_kernel|\bload_vector\b|\bVectorized<|at::vec::|\bfloat4\b|\b__half2\b|\bhalf2\b|\bnv_bfloat162\b|\bfloat2\b|\bvectorized\w*", 2.5, 1.0, 0.3),
        (r"reinterpret_cast<(?:const )?(?:float4|int4|uint4|float2|int2|uint2)\s*\*>", 2.5, 1.0, 0.3),
        (r"\b__h(?:add|sub|mul|fma|max|min)2\b|\b__float22half2_rn\b|\b__halves2half2\b|\bbf16x2\b|\btl\.reshape\(.*\(\s*\w+\s*,\s*2\s*\)", 2.0, 1.0, 0.3),
    ],
    "memory_coalescing": [
        (r"(?i:coalesc\w*)", 2.5, 1.0, 0.3),
        (r"\bthreadIdx\.x\s*\*\s*\w*[sS]tride\b", 1.0, 0.3, 1.0),
    ],
    "tiling_shared_memory": [
        (r"\b__shared__\b|extern\s+__shared__|\bsmem_?\w*|SharedStorage|cuda::memcpy_async|\bcp\.async\b|tl\.make_block_ptr|\bTILE_(?:SIZE|M|N|K|DIM)\b|\btile_(?:size|m|n|k)\b", 2.0, 1.0, 0.3),
        (r"\bBLOCK_(?:SIZE_)?[MNK]\b", 0.7, 1.0, 0.3),
        (r"\b__syncthreads\(\)", 0.5, 1.0, 0.3),
    ],
    "launch_config_tuning": [
        (r"\bnum_warps\s*=|\bnum_stages\s*=|\bnum_threads\(\)|\bkNumThreads\b|\bblock_size\s*=|\bBLOCK_SIZE\s*=|\bdim3\s+\w+\s*\(|\bthreads_per_block\b|\bMAX_THREADS\b|\bmax_threads\b", 1.5, 1.0, 0.7),
        (r"<<<[^>]*>>>", 0.5, 1.0, 0.5),
        (r"gridDim\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*gridDim\.x|grid_stride|CUDA_KERNEL_LOOP", 2.0, 1.0, 0.3),
        (r"multiProcessorCount|multi_processor_count|\bnum_sms\b|\bNUM_SMS\b|\bkThreads\b|\bkBlockSize\b|\bkNumWarps\b|\bthreads_per_cta\b", 1.5, 1.0, 0.7),
        (r"\w*split\w*heuristic\w*|\bheuristic\w*split\w*|\bget_split_k\w*|\bget_num_splits\w*", 2.0, 1.0, 0.5),  # v5 (C1)
    ],
    "occupancy_control": [
        (r"__launch_bounds__|C10_LAUNCH_BOUNDS\w*|maxrregcount|maxnreg|cudaOccupancy\w+|\bminBlocksPerMultiprocessor\b", 3.0, 1.0, 0.7),
        (r"amdgpu_waves_per_eu|amdgpu-waves-per-eu|\bwaves_per_eu\b|amdgpu_flat_work_group_size|\bmaxrregcount\b|--maxrregcount", 2.5, 1.0, 0.7),
    ],
    "warp_level_reduction": [
        (r"__shfl_\w+|WARP_SHFL\w*|\bBlockReduce\w*|\bWarpReduce\w*|cub::BlockReduce|cub::WarpReduce|\bwarp_reduce\w*|\bblock_reduce\w*|__reduce_\w+_sync|cg::reduce", 3.0, 1.0, 0.3),
        (r"\bSPLIT_K\b|\bsplit_k\b|\bsplitK\b|\bsplit_kv\b|\bnum_splits\b", 2.0, 1.0, 0.3),
        (r"__builtin_amdgcn_(?:ds_swizzle|mov_dpp|update_dpp|ds_bpermute)\w*|\bwarp_shuffle\w*|tl\.reduce\(|\bWARP_SIZE\s*/\s*2\b", 2.5, 1.0, 0.3),
    ],
    "atomic_contention_avoidance": [
        (r"\batomic(?:Add|CAS|Max|Min|Inc|Exch)\b|\bgpuAtomic\w+|\bfastAtomicAdd\b|tl\.atomic_\w+|\batomic_add\b", 2.0, 0.6, 1.0),
    ],
    "autotuning": [
        (r"triton\.autotune|@autotune\b|\bmax[-_]autotune\b|cudnn\.benchmark|TunableOp|PYTORCH_TUNABLEOP\w*|coordinate_descent_tuning|\bautotune\w*", 3.0, 1.0, 0.3),
        (r"triton\.Config\(", 1.0, 1.0, 0.3),
    ],
    "vendor_library_dispatch": [
        # v4: a call into a library API is a dispatch; the library's name alone is often context
        (r"at::cuda::blas::\w+\s*(?:<[^>]*>)?\s*\(|\b(?:cublas|cublasLt|cudnn|hipblas|hipblasLt|rocblas|cusparse|cufft)[A-Z]\w*\s*\(|torch\.ops\.\w*(?:flash|cutlass|cublas|marlin)\w*|\bflash_attn_(?:func|varlen_func|with_kvcache)\b|scaled_dot_product_attention\(", 2.5, 1.0, 0.3),
        (r"\bcublas\w*|\bcublasLt\w*|at::cuda::blas::\w+|\bcudnn[A-Z]\w*|\bcutlass::|\bflash_attn\w*|\bflash_attention\w*|_scaled_dot_product_(?:flash|efficient|cudnn)\w*|scaled_dot_product_attention|\bmkldnn\w*|\bonednn\w*|xformers\.ops|\bhipblas\w*|\brocblas\w*|\bcusparse\w*|\bcufft\w*|\bflashinfer\w*|at::native::mkldnn", 1.2, 1.0, 0.3),  # v4: 2.5 -> 1.2 (a library name in code is often context)
        (r"\bcute::|\bcutlass_\w+|\bmarlin_\w+|\bdeep_gemm\w*|\bhipblaslt\w*|\bcudnn_\w+|torch\.backends\.cuda\.enable_(?:flash|mem_efficient|cudnn)_sdp", 1.0, 1.0, 0.3),  # v4: 2.0 -> 1.0
    ],
    "host_sync_elimination": [
        (r"\.item\(\)|\.tolist\(\)|\.nonzero\(\)|torch\.nonzero\(", 2.0, 0.1, 1.0),
        (r"torch\.cuda\.synchronize\(|\.synchronize\(\)|cuda(?:Device|Stream|Event)Synchronize|\bsynchronize\(\)", 2.5, 0.1, 1.0),
        (r"\bnon_blocking\s*=\s*True", 1.5, 1.0, 0.1),
        (r"set_sync_debug_mode|\bsync_free\w*|\bno_sync\w*", 1.5, 1.0, 0.3),
    ],
    "stream_concurrency": [
        (r"torch\.cuda\.Stream\(|torch\.cuda\.stream\(|\.wait_stream\(|\.record_stream\(|cudaStreamCreate\w*|getStreamFromPool|CUDAStreamGuard|getCurrentCUDAStream|cudaStreamWaitEvent|\.wait_event\(", 2.0, 1.0, 0.3),
        (r"\bpin_memory\b|\bpinned\w*|cudaHostAlloc|cudaMallocHost", 1.5, 1.0, 0.3),
        (r"\bprefetch\w*", 1.5, 1.0, 0.3),
    ],
    "launch_overhead_reduction": [
        (r"torch\.cuda\.CUDAGraph|torch\.cuda\.graph\(|\bCUDAGraph\w*|cudaGraph\w+|cudaStreamBeginCapture|make_graphed_callables|reduce-overhead|\bcudagraph\w*|\bcuda_graph\w*", 3.0, 1.0, 0.3),
        (r"\bmulti_tensor_apply\w*|\bMultiTensorApply\w*", 3.0, 1.0, 0.3),
        (r"\.replay\(\)|capture_begin\(|graph_capture\w*", 2.5, 1.0, 0.3),
    ],
    "allocator_reuse": [
        (r"\bcudaMalloc(?:Async)?\b|CUDACachingAllocator|\bexpandable_segments\b|PYTORCH_CUDA_ALLOC_CONF|\bMemPool\b|graph_pool_handle|\bempty_cache\(", 2.5, 1.0, 0.5),
        (r"\bworkspace\w*|\bWorkspace\w*", 1.5, 1.0, 0.3),
        (r"\bscratch\w*|\b_buffer_pool\w*|\bbuffer_pool\w*|\bpreallocate\w*", 1.0, 1.0, 0.3),
    ],
    "transfer_reduction": [
        (r"\.to\(\s*['\"]cpu['\"]|\.cpu\(\)|\.numpy\(\)|cudaMemcpy(?!Async)\b|\.to\(\s*device\s*=\s*['\"]cpu", 2.0, 0.1, 1.0),
        (r"cudaMemcpyAsync|\bHostToDevice\b|\bDeviceToHost\b|\bcudaMemcpyDeviceToHost\b", 0.7, 1.0, 1.0),
    ],
    "build_configuration": [
        (r"TORCH_CUDA_ARCH_LIST|CMAKE_CUDA_ARCHITECTURES|CUDA_ARCH\w*|-gencode|\bsm_\d{2,3}a?\b|\bcompute_\d{2,3}a?\b|CMAKE_BUILD_TYPE|target_compile_options|extra_compile_args|\bnvcc_flags\b|NVCC_FLAGS|CMAKE_CUDA_FLAGS|CMAKE_CXX_FLAGS|-Xptxas|(?<![\w-])-O[23s]\b|-march=|-flto\b|\bccache\b", 2.5, 1.0, 0.5),
        (r"(?<![\w-])-G\b|-lineinfo\b|-DNDEBUG\b|-rdc=", 1.5, 1.0, 0.5),
    ],
}

#: Changed-file paths that are evidence on their own (build files): (pattern, strategy, weight).
PATH_RULES: list[tuple[re.Pattern, str, float]] = [
    (re.compile(r"(?:^|/)(?:CMakeLists\.txt|[\w.-]+\.cmake|setup\.py|build\.sh|Makefile|BUILD(?:\.bazel)?|\.bazelrc|meson\.build)$"), "build_configuration", 1.0),
]

#: Rules v3: cues that a change is *not itself an optimisation* although it may name one: it
#: adds tests, benchmarks or docs, fixes a bug, bumps a dependency, reverts, renames or
#: refactors. Matched against the title after its leading ``[tags]`` and ``area:`` prefix are
#: stripped (``TITLE_PREFIX``), so they read the author's intent verb. A strategy word in such a
#: title ("Add unit tests for the fp8 quantization ops", "Fix NaN in fused layer norm") names
#: the code under test or repair, not what the change does to it.
_FIX_OBJECT = (r"nans?|infs?|crash\w*|segfaults?|segmentation faults?|illegal memory access\w*|out[- ]of[- ]bounds|oob|"
               r"hangs?|deadlocks?|races?|race conditions?|typos?|bugs?|errors?|exceptions?|assert\w*|wrong|incorrect|"
               r"mismatch\w*|accuracy|numerics?|numerical|correctness|build|compil\w+ (?:errors?|failures?|warnings?)|"
               r"warnings?|leaks?|overflows?|underflows?|flak\w+|tests?|ci|lint|edge cases?|corner cases?|docs?|"
               r"deprecation\w*|import\w*")
#: Words that make a "fix" title a performance change ("Fix unintended CPU-GPU sync", "Fixed cpu overhead").
_PERF_WORDS = (r"(?:perf|performance|slow\w*|speed\w*|latency|throughput|regression|bandwidth|overhead|sync\w*|"
               r"redundant|unnecessary|unneeded|needless|faster|optimi[sz]\w*|uncoalesced|coalesc\w*|access patterns?|"
               r"scattered|bank conflicts?|spill\w*|contention)")
NON_OPTIMISATION_TITLE: list[re.Pattern] = [re.compile(p) for p in (
    # adds or extends tests, benchmarks, docs, examples
    r"^(?:add|adds|added|adding|extend\w*|expand\w*|update\w*|write|writes|new)\b(?:\s+\S+){0,4}?\s+"
    r"(?:unit |regression |correctness |numerical |more |missing |extra |a |an |the )*"
    r"(?:tests?|test cases?|test coverage|testing|benchmarks?|bench(?:mark)? scripts?|microbenchmarks?|docs?|documentation|"
    r"docstrings?|examples?|tutorials?|type hints|comments?|ci jobs?|logging|log messages|metrics|nvtx (?:ranges?|markers?)|"
    r"profil(?:er|ing) (?:hooks?|ranges?|markers?))(?![\w-])",
    r"^(?:skip|skips|disable[sd]?|enable[sd]?|re-?enable[sd]?|xfail\w*|unskip\w*)\b" + _FEW + r"\btests?\b",
    # removes dead code
    r"^(?:remove[sd]?|removing|delete[sd]?|deleting|drop|drops|dropped)\b(?:\s+\S+){0,2}?\s+(?:unused|dead|deprecated|obsolete|stale|legacy)\b",
    # fixes a bug (but "Fix the access pattern", "Fix uncoalesced stores" are optimisations, and
    # so is a fix that names a performance problem: "Fix slow ...", "Fix perf bug in ...")
    r"^(?:fix|fixes|fixed|fixing|resolve[sd]?|resolving)\b(?!.*\b(?:perf|performance|slow\w*|speed\w*|latency|throughput|"
    r"regression|bandwidth|overhead)\b)" + _FEW + r"\b(?:" + _FIX_OBJECT + r")\b",
    # v4: any fix, bug fix or hot fix whose title names no performance problem; deletes,
    # vendored copies, "missing ...", and making inputs contiguous (a correctness change)
    r"^(?:fix|fixes|fixed|fixing|resolve[sd]?|resolving|bug ?fix\w*|hot ?fix\w*)\b(?!.*\b" + _PERF_WORDS + r"\b)",
    r"^(?:delete[sd]?|deleting|vendor|vendors|vendored|missing)\b",
    r"^(?!.*\b" + _PERF_WORDS + r"\b).*\b(?:mem(?:ory)? leaks?|leaks?|race conditions?|races?|crash\w*|segfaults?|deadlocks?|"
    r"hangs?|illegal memory access\w*|use-after-free|bugs?)\b",
    r"^(?:make|makes|ensure|ensures|force|forces)\b" + _FEW + r"\bcontiguous\b",
    # bumps a dependency or a version
    r"^(?:bump\w*|upgrade\w*|update\w*|pin|pins|pinned|unpin\w*)\b" + _FEW
    + r"(?:\bto (?:\S+ )?v?\d+(?:\.\d+)+\b|\bsubmodules?\b|\bversions?\b|\bdependenc\w+|\brequirements\b|\block ?file\b)",
    # reverts, renames, refactors, documents
    r"^(?:revert\w*|rename\w*|refactor\w*|document|documents|documenting|reformat\w*|deprecate[sd]?|typo)\b",
)]
#: Leading ``[tag]`` groups and an ``area:`` prefix of a title; a tag or prefix that is itself
#: docs / tests / CI (``[Doc]``, ``docs:``, ``test:``) is a cue of its own.
TITLE_PREFIX = re.compile(r"^\s*(?:\[[^\]]{1,40}\]\s*)*(?:[\w./ -]{1,40}:\s+)?")
NON_OPTIMISATION_PREFIX = re.compile(r"\[(?:docs?|documentation|tests?|testing|ci|chore|typo|lint|style)\]"
                                     r"|^\s*(?:docs?|documentation|tests?|ci|chore|typo|lint|style|dependency|deps)(?:\([^)]*\))?:")
#: v4: a bug-fix tag or prefix (``[Bugfix]``, ``hotfix:``, ``fix(area):``) is a cue unless the
#: title names a performance problem; a performance tag (``[Perf]``, ``perf:``) overrides every
#: title cue, since the author says the change is about speed.
FIX_PREFIX = re.compile(r"\[(?:bug ?fix|hot ?fix|fix|build fix)\]|^\s*(?:bug ?fix|hot ?fix|fix)(?:\([^)]*\))?:")
PERF_TAG = re.compile(r"\[(?:perf|performance|[\w ]+ perf)\]|^\s*(?:\[[^\]]*\]\s*)*perf(?:\([^)]*\))?:")
PERF_WORDS = re.compile(r"\b" + _PERF_WORDS + r"\b")
#: Statements in a description that the change leaves the code's performance alone.
NON_OPTIMISATION_BODY: list[re.Pattern] = [re.compile(p) for p in (
    r"\b(?:tests?|docs?|documentation|benchmarks?)[- ]only\b",
    r"\bno (?:functional (?:or|and) )?(?:library|kernel|runtime|performance|perf) (?:code )?changes?\b",
    r"\b(?:the )?(?:kernels?|library|library code|runtime code|op implementations?) (?:is|are|stays?|remains?) (?:untouched|unchanged|not touched)\b",
    r"\bpure(?:ly)? (?:a )?(?:renam\w+|refactor\w*|cosmetic|mechanical)\b",
    r"\bgenerated code is (?:identical|unchanged|the same)\b",
    r"\bno call sites?\b" + _FEW + r"\bchange\b",
    # v5: a refactor that says it changes no algorithm
    r"\b(?:changes?|with|without) no (?:algorithms?|algorithmic changes?)\b|\bno algorithm(?:ic)? changes?\b"
    r"|\bdoes(?: not|n't) change (?:the |any )?algorithms?\b",
)]

TEXT_RULES: list[TextRule] = [
    TextRule(strategy, re.compile(pattern), weight)
    for strategy, rules in _TEXT.items() for pattern, weight in rules
]

CODE_RULES: list[CodeRule] = [
    CodeRule(strategy, re.compile(pattern), weight, added, removed, literal_triggers(pattern))
    for strategy, rules in _CODE.items() for pattern, weight, added, removed in rules
]

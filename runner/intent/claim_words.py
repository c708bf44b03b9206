"""The words of performance claims: units, metrics, directions, comparison points, scope (data
and small pure look-ups over it; the parser is :mod:`runner.intent.claims`).

A metric is one of ``METRICS``; its direction is ``faster``/``slower`` for the time-like metrics
and throughput, ``less``/``more`` for memory and ``other``. Units are matched case-sensitively
where case matters (``ms`` against ``Ms``), and the unit decides the metric of a before/after
pair: a time unit gives ``time`` (``latency``/``compile_time`` when the sentence says so), a rate
gives ``throughput``, a size gives ``memory``.
"""

from __future__ import annotations

import re

METRICS = ("time", "throughput", "latency", "memory", "compile_time", "other")
#: Metrics whose smaller value is better and whose direction reads faster/slower.
TIME_LIKE = ("time", "latency", "compile_time")

#: A number as PR texts write it: ``3358``, ``93.8``, ``1,394.46``, ``.5``.
NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+"

#: Time units in seconds (``"s"`` alone only after a number: see ``UNIT``).
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
              "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
              "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0,
              "hour": 3600.0, "hours": 3600.0}
#: Memory units in bytes (``Mb`` read as megabytes: PR texts rarely mean bits).
MEMORY_UNITS = {"B": 1, "bytes": 1, "byte": 1, "KB": 1e3, "KiB": 1024, "kB": 1e3, "MB": 1e6,
                "MiB": 2 ** 20, "Mb": 1e6,
                "GB": 1e9, "GiB": 2 ** 30, "G": 1e9, "Gb": 1e9, "TB": 1e12, "TiB": 2 ** 40}
#: Rates: anything per second, and the FLOP rates.
RATE = (r"(?:[A-Za-z]+/s(?:ec)?|[A-Za-z]+ per (?:second|sec)|G?FLOPS|GFLOP/s|T?FLOPS|TFLOP/s|TF"
        r"|fps|FPS|qps|QPS|GB/s|TB/s)")
UNIT = (r"(?:(?P<unit>" + RATE + r"|ns|us|µs|μs|ms|secs?|seconds?|mins?|minutes?|hrs?|hours?|h|s"
        r"|KiB|MiB|GiB|TiB|KB|kB|MB|Mb|GB|Gb|TB|G|bytes?|B)(?![A-Za-z0-9]))")


def number_of(text: str | None) -> float | None:
    """``"1,394.46"`` → 1394.46; None for None or ``""``."""
    return float(text.replace(",", "")) if text else None


def direction_of(metric: str, better: bool) -> str:
    """``faster``/``slower`` for the time-like metrics and throughput, else ``less``/``more``."""
    if metric in TIME_LIKE or metric == "throughput":
        return "faster" if better else "slower"
    return "less" if better else "more"


def unit_metric(unit: str) -> tuple[str, float] | None:
    """``(metric, scale)`` of a unit: ``("time", seconds)``, ``("memory", bytes)`` or
    ``("throughput", 1.0)``; None for a word that is no unit."""
    if unit in TIME_UNITS:
        return "time", TIME_UNITS[unit]
    if unit in MEMORY_UNITS:
        return "memory", float(MEMORY_UNITS[unit])
    if re.fullmatch(RATE, unit):
        return "throughput", 1.0
    return None


# --- the words around a number -------------------------------------------------------------

#: Words that make a multiplier or a percentage a time gain (``3x faster``, ``a 21% speedup``).
FASTER = (r"(?:faster|quicker|speed[- ]?ups?|speed|acceleration|perf(?:ormance)?|improvements?|"
          r"gains?|better|boost)")
SLOWER = r"(?:slower|slow[- ]?downs?|regressions?)"
LESS = (r"(?:less|lower|fewer|smaller|reductions?|reduced|decrease|shrink|savings?|saved|freed|"
        r"drop|cut)")
MORE = r"(?:more|higher|increases?|larger)"
#: Verbs in front of a quantity (``reduce memory by 30%``, ``speed up X by 2x``).
VERB_FASTER = (r"(?:speed(?:s|ed|ing)?[- ]?up|speeds|accelerat\w*|improv\w*|optimi[sz]\w*|boost\w*"
               r"|faster|gives?|giving|yield\w*|gain\w*)")
VERB_LESS = (r"(?:reduc\w*|cut(?:s|ting)?\b|br(?:ing|ings|ought) down|lower\w*|shrink\w*|sav\w+|"
             r"decreas\w*|drops?|trim\w*|shav\w*)")
VERB_MORE = r"(?:increas\w*|rais\w*|grow\w*|doubl\w*)"
#: A claim about a fixed slowness: ``Fix 20x slowdown`` means head is 20x faster than base.
REPAIR = r"(?:fix\w*|address\w*|resolv\w*|avoid\w*|remov\w*|eliminat\w*|revert\w*)"

#: What a sentence's words say the metric is, first match wins (checked near the number first).
METRIC_WORDS = (
    ("compile_time", r"(?<!with )(?<!using )(?<!torch\.)(?<!\w)compil\w*|"
                     r"\bbuild(?:s|ing)?\b(?! ?er)|\bjit\b|"
                     r"warm-?up|start-?up|(?:warm|cold) start|import time"),
    ("latency", r"latency|latencies|\bTTFT\b|\bTPOT\b|\bITL\b|\bE2EL\b|time[- ]to[- ]first"),
    ("throughput", r"throughput|tok(?:en)?s?/s|tokens per second|samples/s|it/s|img/s|"
                   r"\bflops\b|\bTFLOPS\b|bandwidth|\bQPS\b|\bFPS\b|req(?:uest)?s?/s|\bMFU\b"),
    ("memory", r"memory|\bv?ram\b|\bvram\b|footprint|workspace|\bOOM\b|allocat\w*|\bHBM\b|"
               r"\bGPU mem|peak mem|cache size|\bbytes\b"),
    ("other", r"kernel launches|launches|instructions|registers?|calls|syncs?|"
              r"synchroni[sz]ations?|copies|round[- ]trips|binary size|wheel size|file size"),
)

#: Numbers near these words are not performance claims (quality, tolerances, coverage, ...).
NOT_PERF = (r"accura\w*|\bloss\b|perplexity|\bppl\b|\bmAP\b|\bBLEU\b|\bF1\b|recall|precision|"
            r"coverage|tolerance|\batol\b|\brtol\b|error rate|\bMSE\b|\bMAE\b|win rate|"
            r"success rate|pass rate|test(?:s)? pass|headroom|utili[sz]ation|occupancy|"
            r"of the (?:time|"
            r"total|runs)|probability|chance|quantile|percentile|\bp\d\d\b|\bdiscount|prices?\b")

#: Comparison points that are the base revision (``faster than main``).
BASE_WORDS = (r"(?:the\s+)?(?:main|master|base(?:line)?|before|previous(?:ly)?|prior|current|"
              r"original|old(?:er)?|existing|upstream|trunk|default|unpatched|the (?:old|current|"
              r"existing|previous|original) (?:\w+ )?"
              r"(?:implementation|version|code|kernel|path|one)"
              r"|this PR|without this (?:PR|change|patch)|before this (?:PR|change|patch)|"
              r"status quo|nightly|HEAD)\b")
#: ``than X``, ``vs X``, ``compared to X``, ``over X``, ``relative to X`` after a claim.
VERSUS = (r"(?:than|vs\.?|versus|compared (?:to|with|against)|relative to|against|over|"
          r"in comparison (?:to|with))\s+(?P<vs>[`'\"]?[\w./+-]+(?:[ -][\w./+-]+){0,3})")


# --- scope --------------------------------------------------------------------------------

DEVICES = (r"\b(?:[AHBLVT]\d{2,3}[A-Z]?(?:-\w+)?|GB\d{3}|MI\d{3}X?|RTX ?\d{4}(?: Ti)?|"
           r"(?:GeForce )?GTX ?\d{4}|\d{4} ?Ti|[Mm]\d (?:Max|Pro|Ultra)|[Mm][1-4]\b|CPU|GPU|"
           r"CUDA|ROCm|MPS|XPU|TPU|Intel Arc|Adreno|Apple Silicon|Hopper|Blackwell|Ampere|"
           r"SM_?\d{2,3}[a-z]?|sm_\d{2,3}|W7900|gfx\d+|AVX2|AVX-?512|s390x|WASM|Vulkan|Metal)\b")
DTYPES = (r"\b(?:[bf]p(?:16|32|64|8|4|6)|bf16|float(?:16|32|64|8)|bfloat16|half|int[48]|u?int\d+|"
          r"(?:nv|mx)fp[468]|fp8_e4m3|e4m3|e5m2|tf32|w\d+a\d+|q\d_[0-9K](?:_\w)?|"
          r"Q\d_[0-9K](?:_\w)?)\b")
SHAPES = r"(?:\(\s*\d+(?:\s*,\s*\d+)+\s*\)|\b\d+(?:x\d+)+\b|\[\s*\d+(?:\s*,\s*\d+)+\s*\])"
BATCH = (r"\b(?:batch(?:[ _-]?sizes?)?|bs|BS)\s*(?:=|:|of|<=|>=|<|>|≤|≥)?\s*"
         r"(?:\d+(?:\s*(?:-|–|to)\s*\d+)?)")
MODELS = (r"\b(?:Llama|LLaMA|Qwen|Mistral|Mixtral|GPT|Gemma|Phi|DeepSeek|DS|Falcon|OPT|BERT|ViT|"
          r"ResNet|T5|SANA|SD|SDXL|Flux|Whisper|Mamba|Bloom|Yi|InternLM|OLMo|Kimi)"
          r"[\w.-]*(?:[ -]?\d+(?:\.\d+)?[BbMm]\b)?")


def scope_of(text: str) -> dict:
    """The scope named in ``text``: ``{device, dtype, shape, batch, model}``, each a list of the
    strings found in order (duplicates dropped); keys with nothing found are left out."""
    found: dict[str, list[str]] = {}
    for key, pattern in (("device", DEVICES), ("dtype", DTYPES), ("shape", SHAPES),
                         ("batch", BATCH), ("model", MODELS)):
        values: list[str] = []
        for match in re.finditer(pattern, text):
            value = match.group(0).strip()
            if value not in values:
                values.append(value)
        if values:
            found[key] = values
    return found


def metric_of(text: str) -> str | None:
    """The metric ``text``'s words name (the first of ``METRIC_WORDS`` found), None if none."""
    for metric, pattern in METRIC_WORDS:
        if re.search(pattern, text, re.IGNORECASE):
            return metric
    return None

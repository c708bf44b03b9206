"""runner.intent.classify_rules (the hand rules the model reads): one text and one diff per strategy, unknown, weighting of the diff."""

from __future__ import annotations

import pytest

from runner.intent import STRATEGIES, STRATEGY_RISKS, classify_rules
from runner.intent.rules import CODE_RULES, TEXT_RULES

IDS = [
    "algorithm_replacement", "redundancy_elimination", "copy_avoidance", "precision_specialization",
    "layout_fast_path", "math_simplification", "kernel_fusion", "vectorization", "memory_coalescing",
    "tiling_shared_memory", "launch_config_tuning", "occupancy_control", "warp_level_reduction",
    "atomic_contention_avoidance", "autotuning", "vendor_library_dispatch", "host_sync_elimination",
    "stream_concurrency", "launch_overhead_reduction", "allocator_reuse", "transfer_reduction",
    "build_configuration",
]

TEXTS = {
    "algorithm_replacement": ("Replace the O(n^2) matching with a binary search", ""),
    "redundancy_elimination": ("Hoist the mask computation out of the layer loop", "Avoid recomputing it per layer."),
    "copy_avoidance": ("Avoid a copy in narrow() by returning a view", ""),
    "precision_specialization": ("Add a bf16 path with fp32 accumulation to the norm kernel", ""),
    "layout_fast_path": ("channels_last fast path for max_pool2d", ""),
    "math_simplification": ("Use fast math intrinsics in the GELU kernel", ""),
    "kernel_fusion": ("[inductor] Fuse the bias add into the matmul epilogue", ""),
    "vectorization": ("Vectorized 128-bit loads in the copy kernel", ""),
    "memory_coalescing": ("Coalesce the global reads of the transpose kernel", ""),
    "tiling_shared_memory": ("Stage tiles in shared memory and pad to avoid bank conflicts", ""),
    "launch_config_tuning": ("Tune num_warps and the block size of the decode kernel", ""),
    "occupancy_control": ("Add __launch_bounds__ to cut register pressure", "Raises occupancy to 50 %."),
    "warp_level_reduction": ("Use warp shuffles for the block reduce in softmax", ""),
    "atomic_contention_avoidance": ("Privatize the histogram to avoid atomic contention", ""),
    "autotuning": ("[Triton] Autotune the GEMM configs", ""),
    "vendor_library_dispatch": ("Dispatch fp16 GEMMs to cuBLASLt", ""),
    "host_sync_elimination": ("[Perf] Remove a GPU<->CPU sync from the sampler", "No more .item() per step."),
    "stream_concurrency": ("Overlap the weight prefetch with compute on a side stream", ""),
    "launch_overhead_reduction": ("Capture the decode loop in CUDA graphs to cut launch overhead", ""),
    "allocator_reuse": ("Reuse the cuFFT workspace through the caching allocator", ""),
    "transfer_reduction": ("Keep the token ids on the GPU to avoid host round trips", ""),
    "build_configuration": ("Add sm_90a to TORCH_CUDA_ARCH_LIST and build with -O3", ""),
}

# One changed line (or two) per strategy, as a diff of the given file: code evidence only.
DIFFS = {
    "algorithm_replacement": ("model/bucket.py", "+    idx = torch.searchsorted(boundaries, x)"),
    "redundancy_elimination": ("model/rope.py", "+@functools.lru_cache(maxsize=None)\n+def tables(n):"),
    "copy_avoidance": ("model/norm.py", "-    x = x.contiguous()\n+    y = layer(x)"),
    "precision_specialization": ("model/attn.py", "+    q = q.to(torch.bfloat16)"),
    "layout_fast_path": ("csrc/pool.cu", "+  if (input.suggest_memory_format() == at::MemoryFormat::ChannelsLast) {"),
    "math_simplification": ("csrc/norm.cu", "+  float inv = rsqrtf(var + eps);"),
    "kernel_fusion": ("optim/adam.py", "+    torch._foreach_mul_(grads, scale)"),
    "vectorization": ("csrc/copy.cu", "+  using vec_t = aligned_vector<scalar_t, 4>;"),
    "memory_coalescing": ("csrc/emb.cu", "+  const int col = coalesced_column(tid, lane);"),
    "tiling_shared_memory": ("csrc/transpose.cu", "+  __shared__ float tile[32][33];"),
    "launch_config_tuning": ("csrc/add.cu", "+  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {"),
    "occupancy_control": ("csrc/ln.cu", "+__global__ void __launch_bounds__(256) ln_bwd(float* x) {"),
    "warp_level_reduction": ("csrc/softmax.cu", "+    v += __shfl_down_sync(0xffffffff, v, offset);"),
    "atomic_contention_avoidance": ("csrc/hist.cu", "-    atomicAdd(&hist[bin], 1);\n+    local[bin] += 1;"),
    "autotuning": ("kernels/mm.py", "+@triton.autotune(configs=configs, key=[\"M\", \"N\"])"),
    "vendor_library_dispatch": ("csrc/linear.cpp", "+    at::cuda::blas::gemm<float>(transa, transb, m, n, k);"),
    "host_sync_elimination": ("model/sampler.py", "-    n = int(mask.sum().item())\n+    n = mask.sum()"),
    "stream_concurrency": ("model/loader.py", "+    side = torch.cuda.Stream()"),
    "launch_overhead_reduction": ("model/runner.py", "+    graph = torch.cuda.CUDAGraph()"),
    "allocator_reuse": ("csrc/fft.cpp", "+    void* ws = c10::cuda::CUDACachingAllocator::raw_alloc(nbytes);"),
    "transfer_reduction": ("model/beam.py", "-    ids = ids.cpu()\n+    ids = ids"),
    "build_configuration": ("CMakeLists.txt", "+set(CMAKE_CUDA_ARCHITECTURES 80 90a)"),
}


def make_diff(path: str, body: str) -> str:
    lines = body.splitlines()
    old = sum(1 for line in lines if line[0] in "- ")
    new = sum(1 for line in lines if line[0] in "+ ")
    return (f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -10,{old} +10,{new} @@\n" + "\n".join(lines) + "\n")


def test_ids_are_those_of_strategies_md():
    assert list(STRATEGIES) == IDS
    assert set(STRATEGY_RISKS) == set(IDS)
    assert {r.strategy for r in TEXT_RULES} == set(IDS) == {r.strategy for r in CODE_RULES}
    assert set(TEXTS) == set(DIFFS) == set(IDS)


@pytest.mark.parametrize("strategy", IDS)
def test_text_names_the_strategy(strategy):
    title, body = TEXTS[strategy]
    result = classify_rules(title=title, body=body)
    assert result["strategy"] == strategy, result
    assert 0 < result["confidence"] <= 1
    assert result["signals"] and all(isinstance(s, str) for s in result["signals"])
    assert result["candidates"][0]["strategy"] == strategy


@pytest.mark.parametrize("strategy", IDS)
def test_diff_alone_names_the_strategy(strategy):
    path, body = DIFFS[strategy]
    result = classify_rules(diff=make_diff(path, body))
    assert result["strategy"] == strategy, result
    assert any(path in s for s in result["signals"]), result["signals"]


@pytest.mark.parametrize("title,body", [
    ("Improve performance of the scheduler", "About 10 % faster on our benchmark."),
    ("[Perf] Speed up model loading", ""),
    ("Fix a typo in the README", ""),
    ("Refactor the config parser", "No functional change."),
    ("", ""),
])
def test_neutral_text_is_unknown(title, body):
    result = classify_rules(title=title, body=body)
    assert result["strategy"] == "unknown"
    assert result["confidence"] == 0.0
    assert result["signals"] == []


def test_neutral_diff_is_unknown():
    diff = make_diff("engine/log.py", '-    logger.info("step %d", i)\n+    logger.debug("step %d", i)')
    assert classify_rules(title="Clean up logging", diff=diff)["strategy"] == "unknown"


def test_comment_only_lines_weigh_less_than_code():
    code = classify_rules(diff=make_diff("csrc/k.cu", "+__global__ void __launch_bounds__(256) k(float* x) {"))
    comment = classify_rules(diff=make_diff("csrc/k.cu", "+// TODO: try __launch_bounds__(256) here later"))
    string = classify_rules(diff=make_diff("tools/gen.py", '+    src = "__launch_bounds__(256)"'))
    assert code["strategy"] == "occupancy_control"
    assert comment["strategy"] == "unknown"          # one mention in a comment is not enough
    assert comment["candidates"][0]["strategy"] == "occupancy_control"
    assert comment["candidates"][0]["confidence"] < string["candidates"][0]["confidence"] < code["confidence"]
    assert "+comment" in comment["candidates"][0]["signals"][0]


def test_block_comment_and_docstring_state_carries_across_lines():
    diff = make_diff("csrc/k.cu", "+/* We could use\n+   __launch_bounds__(256) here */\n+int x = 0;")
    assert classify_rules(diff=diff)["strategy"] == "unknown"
    diff = make_diff("m.py", '+    """Notes:\n+    torch.cuda.CUDAGraph would help here.\n+    """')
    assert classify_rules(diff=diff)["strategy"] == "unknown"


def test_removed_item_is_host_sync_elimination_but_added_item_is_not():
    removed = classify_rules(diff=make_diff("s.py", "-    n = int(mask.sum().item())\n+    n = mask.sum()"))
    added = classify_rules(diff=make_diff("s.py", "-    n = mask.sum()\n+    n = int(mask.sum().item())"))
    assert removed["strategy"] == "host_sync_elimination"
    assert added["strategy"] != "host_sync_elimination"
    removed_sync = classify_rules(diff=make_diff("s.py", "-    torch.cuda.synchronize()\n+    pass"))
    assert removed_sync["strategy"] == "host_sync_elimination"


def test_code_evidence_outweighs_a_vague_text():
    diff = make_diff("csrc/ln.cu", "+__global__ void __launch_bounds__(256, 2) ln_bwd(float* x) {")
    result = classify_rules(title="Faster layer norm backward", body="Uses a different tiling.", diff=diff)
    assert result["strategy"] == "occupancy_control"
    assert result["signals"][0].startswith("+code csrc/ln.cu")


def test_several_strategies_give_ranked_candidates():
    result = classify_rules(title="Fuse the optimizer step and capture it in a CUDA graph",
                      body="Fusing cuts kernels; the graph removes the launch overhead of the rest.")
    names = [c["strategy"] for c in result["candidates"]]
    assert {"kernel_fusion", "launch_overhead_reduction"} <= set(names)
    confidences = [c["confidence"] for c in result["candidates"]]
    assert confidences == sorted(confidences, reverse=True)
    assert result["strategy"] == names[0]


def test_title_counts_more_than_body():
    in_title = classify_rules(title="Vectorize the kernel", body="")
    in_body = classify_rules(title="Update", body="Vectorize the kernel")
    assert in_title["confidence"] > in_body["confidence"] > 0


def test_labels_and_commit_messages_are_text_signals():
    assert classify_rules(labels=["cuda graphs"])["strategy"] == "launch_overhead_reduction"
    result = classify_rules(commit_messages=["Use warp shuffles in the reduction\n\nDetails."])
    assert result["strategy"] == "warp_level_reduction"
    assert result["signals"][0].startswith("commits:")


def test_diff_without_hunk_headers_is_read_as_changed_lines():
    assert classify_rules(diff="-    x = y.item()\n+    x = y")["strategy"] == "host_sync_elimination"


def test_removed_line_starting_with_dashes_is_not_a_header():
    diff = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- a comment\n-SELECT 1;\n"
    from runner.intent.diff import parse
    lines, paths = parse(diff)
    assert paths == ["q.sql"]
    assert [line.text for line in lines] == ["-- a comment", "SELECT 1;"]


@pytest.mark.parametrize("title,strategy", [
    ("[CUDA] Add __launch_bounds__ to the softmax kernel", "occupancy_control"),
    ("Use __shfl_xor_sync for the row max", "warp_level_reduction"),
    ("Add C10_LAUNCH_BOUNDS_1(256) to the embedding kernels", "occupancy_control"),
])
def test_code_tokens_with_underscores_in_prose(title, strategy):
    assert classify_rules(title=title)["strategy"] == strategy

"""What a captured measuring call runs under in the worker (:mod:`runner.conventions.capture`):
the callables a script handed to it, the grad and inference modes in force at the call, and the
one zero-argument callable perfgate's sampler times (CUDA graphs replayed for
``do_bench_cudagraph``). torch is taken from ``sys.modules``, never imported here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Measured:
    """What a script handed to the measuring call of one case: the callables timed one after the
    other as one call (a grid point that calls ``do_bench`` twice is timed as both), whether each
    is to be replayed as a CUDA graph (``do_bench_cudagraph``), and the grad and inference modes
    in force at the call."""

    fns: list[Callable[[], Any]] = field(default_factory=list)
    graphs: list[bool] = field(default_factory=list)
    grad_enabled: bool = True
    inference: bool = False
    #: ``torch.autocast``'s dtype on CUDA at the call (None: off): a script that times ``a @ b``
    #: inside ``torch.autocast("cuda", torch.bfloat16)`` is timed in bf16, not FP32 (GPU review #22)
    autocast_dtype: Any = None


def modes() -> tuple[bool, bool, Any]:
    """``(grad enabled, inference mode, CUDA autocast dtype or None)`` at the measuring call."""
    torch = sys.modules.get("torch")
    if torch is None:
        return True, False, None
    autocast = None
    try:
        if torch.is_autocast_enabled("cuda"):
            autocast = torch.get_autocast_dtype("cuda")
    except (AttributeError, TypeError, RuntimeError):  # an older torch: is_autocast_enabled() only
        autocast = None
    return bool(torch.is_grad_enabled()), bool(torch.is_inference_mode_enabled()), autocast


def timed_callable(measured: Measured, device: str) -> tuple[Callable[[], Any], Callable[[], None]]:
    """``(fn, teardown)``: the captured callables as one zero-argument callable (CUDA graphs built
    for ``do_bench_cudagraph`` calls on a CUDA device), with the call's grad and inference modes
    entered for the life of the worker process (``teardown`` leaves them)."""
    torch = sys.modules.get("torch")
    # the modes first: a graph is warmed up and captured under the modes its call ran in (it was
    # captured before them, with autograd on for an inference-mode call: GPU review #5, demo D2)
    contexts = []
    if torch is not None:
        # one after the other: set_grad_enabled sets the mode when it is made, so it is made
        # inside inference mode, and teardown restores what each found
        for make in ((lambda: torch.inference_mode(True)) if measured.inference else None,
                     lambda: torch.set_grad_enabled(measured.grad_enabled),
                     (lambda: torch.autocast("cuda", dtype=measured.autocast_dtype))
                     if measured.autocast_dtype is not None else None):
            if make is not None:
                context = make()
                context.__enter__()
                contexts.append(context)
    fns = []
    for fn, graph in zip(measured.fns, measured.graphs):
        if graph and torch is not None and str(device).startswith("cuda") and torch.cuda.is_available():
            fns.append(cuda_graph(fn, torch))
        else:
            fns.append(fn)

    def teardown() -> None:
        for context in reversed(contexts):
            context.__exit__(None, None, None)

    if len(fns) == 1:
        return fns[0], teardown

    def sequence() -> None:
        for fn in fns:
            fn()

    return sequence, teardown


def cuda_graph(fn: Callable[[], Any], torch: Any) -> Callable[[], Any]:
    """``fn`` captured in a CUDA graph (warmed up on a side stream first, as Triton's
    ``do_bench_cudagraph`` does); returns the graph's ``replay``."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay

"""Register pressure from the compiler's own numbers, without a GPU (issue 49).

The Triton kernels a change touches (:mod:`.find`, :mod:`.evaluate`, :mod:`.plan`), their
specialisations (:mod:`.specs`; captured at launch: :mod:`.capture`), compiled for each target
arch on both sides in a worker process (:mod:`.compile`, :mod:`.worker`, cached by
:mod:`.cache`), read with NVIDIA's tools bundled in the Triton wheel (:mod:`.usage`), the
occupancy they allow (:mod:`.occupancy`) and what got worse (:mod:`.table`, :mod:`.words`);
:mod:`.analysis` is the pass. Pure: find, evaluate, specs, plan, usage, occupancy, table, words.
"""

"""The pull request's code, confined: the bubblewrap jail it runs in (:mod:`.bubblewrap`, with
the system calls it may not make, :mod:`.seccomp`), the limits the kernel enforces on it
(:mod:`.limits` decides, :mod:`.confine` applies), the environment it gets (:mod:`.child_env`:
an allow-list) and what may leave it (:mod:`.launder`). Leaves of the engine, on its face: the
Action runs the compare through them."""

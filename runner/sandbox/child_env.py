"""The environment of every process that runs the target's code: an allow-list, nothing else.

A pull request's code runs in the ``install`` command, the benchmark workers (set-up, timing,
profiling) and anything they start. It must not inherit a credential from whoever started
perfgate: a GitHub Actions step carries ``GITHUB_TOKEN`` / ``INPUT_GITHUB_TOKEN``, the
runner's ``ACTIONS_*`` tokens and the step's command files (``GITHUB_ENV``, ``GITHUB_OUTPUT``,
``GITHUB_PATH``, ``GITHUB_STEP_SUMMARY``, which can change later steps), a developer's shell
an ``SSH_AUTH_SOCK`` or cloud keys. So the child environment is built from names known to be
needed to run Python/CUDA code (:data:`ALLOWED_NAMES`, :data:`ALLOWED_PREFIXES`), never by
removing known secrets from a copy.

git run by the target's code reads neither the system nor the global git configuration
(credential helpers live there: ``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL``) and never
prompts. The repository configuration is kept away by :mod:`runner.pipeline.revisions` (the worktrees
belong to a scratch repository of perfgate's own) and, in GitHub Actions, by
``action.git_credentials``, which removes what ``actions/checkout`` persisted.

A deployment that must hand a variable to the target (a proxy, a private package index) lists
its name in ``PERFGATE_CHILD_ENV`` (comma-separated); :data:`NEVER` names stay out even then.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

#: Exact names passed through: the process basics, locale, temporary folders, the Python and
#: CUDA set-up of the runner (an allocator preloaded by the runner's owner included: it changes
#: timings, so both sides keep it), and CI markers some test suites look at.
ALLOWED_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ",
    "TMPDIR", "TMP", "TEMP", "SYSTEMROOT", "COMSPEC", "PATHEXT", "WINDIR",
    "LD_LIBRARY_PATH", "LD_PRELOAD", "GLIBC_TUNABLES", "LIBRARY_PATH", "CPATH", "CC", "CXX", "CFLAGS", "CXXFLAGS",
    "LDFLAGS",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE",
    "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "HF_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CI", "RUNNER_OS", "RUNNER_ARCH",
    # The runner's job-end clean-up finds the job's processes by it (actions/runner's
    # ProcessInvoker); kept so that an unsandboxed compare's leftovers are found too.
    "RUNNER_TRACKING_ID",
})

#: Name prefixes passed through: locale, Python, thread pools, CUDA and the GPU libraries,
#: and perfgate's own knobs (``PERFGATE_CPUS``, ``PERFGATE_ASLR``, ...).
ALLOWED_PREFIXES = ("LC_", "PYTHON", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "GOTO", "NUMEXPR_", "VECLIB_", "MALLOC_",
                    "CUDA", "NVIDIA_", "CUBLAS", "CUDNN_", "NCCL_", "NVTE_", "KINETO", "TORCH", "PYTORCH_", "TRITON_",
                    "PERFGATE_")

#: Never passed, whatever a deployment lists: the GitHub Actions step's tokens, inputs and
#: command files, and anything named like a credential.
NEVER = re.compile(r"^(GITHUB_TOKEN|GH_TOKEN|GITHUB_ENV|GITHUB_OUTPUT|GITHUB_PATH|GITHUB_STATE|GITHUB_STEP_SUMMARY"
                   r"|INPUT_.*|ACTIONS_.*|SSH_AUTH_SOCK|GIT_ASKPASS|SSH_ASKPASS|GIT_CONFIG_.*)$"
                   r"|TOKEN|SECRET|PASSW|CREDENTIAL|CREDS|PRIVATE_KEY|API_KEY|ACCESS_KEY|AUTH|COOKIE|WEBHOOK"
                   r"|DATABASE_URL|(^|_)(PAT|DSN|KEY)(_|$)", re.IGNORECASE)

#: The variable naming extra names a deployment passes to the target (comma-separated).
EXTRA_VARIABLE = "PERFGATE_CHILD_ENV"

#: git settings of every child: no system or global configuration (credential helpers), no
#: prompts for a password.
GIT_ISOLATION = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}


def allowed(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """May the variable ``name`` reach the target's code? (``extra``: names a deployment added.)"""
    if NEVER.search(name):
        return False
    return name in ALLOWED_NAMES or name in extra or name.startswith(ALLOWED_PREFIXES)


def child_environment(source: Mapping[str, str] | None = None, *, isolate_git: bool = True,
                      **overrides: str) -> dict[str, str]:
    """The environment for a process that runs the target's code.

    Args:
        source: the environment to draw from (default ``os.environ``); only allowed names are
            copied (:func:`allowed`, plus the names listed in its ``PERFGATE_CHILD_ENV``).
        isolate_git: add :data:`GIT_ISOLATION`. False only for perfgate's own processes that
            start the target's (the compare): their git calls need the user's global settings
            (``safe.directory`` in containers), and the workers they start add it themselves.
        overrides: variables set on top (e.g. ``VIRTUAL_ENV``, ``PATH`` of a revision's venv);
            they must be allowed names too.
    Returns:
        A new dict: the allowed variables, :data:`GIT_ISOLATION`, then ``overrides``.
    Raises:
        ValueError: an override names a variable that may not reach the target.
    """
    source = os.environ if source is None else source
    extra = frozenset(n.strip() for n in source.get(EXTRA_VARIABLE, "").split(",") if n.strip())
    env = {k: v for k, v in source.items() if allowed(k, extra)}
    if isolate_git:
        env.update(GIT_ISOLATION)
    for name, value in overrides.items():
        if not allowed(name, extra):
            raise ValueError(f"{name} may not be passed to the target's code")
        env[name] = value
    return env

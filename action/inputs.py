"""The step inputs of the Action, read and checked one by one (pure): ``INPUT_<NAME>`` variables
(``-`` or ``_`` spellings), empty meaning "not given"; each bad value is an
:class:`ActionInputError` naming the input and what it accepts. :mod:`action.environment` builds
the plan from them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from runner.config_values import is_fraction, read_fraction
from runner.errors import UserError


class ActionInputError(UserError):
    """The workflow asked for something the action cannot do; the message says what to fix."""


def get_input(env: Mapping[str, str], name: str) -> str | None:
    """The input ``name`` (as in action.yml, e.g. ``base-ref``), stripped; None when empty."""
    upper = name.upper()
    for key in (f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}", f"INPUT_{upper.replace(' ', '_')}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return None


#: At most this many names in the force-run input, each at most 500 characters.
MAX_FORCE_RUN = 200


def parse_names(value: str | None, name: str) -> tuple[str, ...]:
    """A JSON list of benchmark names (the App's ``force-run``), () when not given.

    Raises:
        ActionInputError: not a JSON list of 1–500-character strings, or more than :data:`MAX_FORCE_RUN`.
    """
    if value is None:
        return ()
    try:
        names = json.loads(value)
    except ValueError:
        names = None
    if not isinstance(names, list) or len(names) > MAX_FORCE_RUN or not all(
            isinstance(n, str) and 0 < len(n) <= 500 for n in names):
        raise ActionInputError(f"input {name} must be a JSON list of at most {MAX_FORCE_RUN} benchmark names")
    return tuple(names)


def parse_bool(value: str | None, name: str, default: bool) -> bool:
    """YAML 1.2 core booleans as Actions passes them (``true``/``false``, any case)."""
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise ActionInputError(f"input {name} must be true or false, got {value!r}")


def parse_fraction(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        number = read_fraction(value)
    except ValueError:
        raise ActionInputError(f"input {name} must be a fraction such as 0.02 (2 %), got {value!r}") from None
    if not is_fraction(number):
        raise ActionInputError(f"input {name} must be a fraction in [0, 1), e.g. 0.02 for 2 %, got {value!r}")
    return number


def parse_seconds(value: str | None, name: str) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise ActionInputError(f"input {name} must be a number of seconds, got {value!r}") from None
    if number <= 0:
        raise ActionInputError(f"input {name} must be > 0 seconds, got {value!r}")
    return number


def parse_rounds(value: str | None, name: str) -> int | None:
    """An integer input >= 2 (rounds before the first look), or None when not given."""
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ActionInputError(f"input {name} must be a whole number of rounds, got {value!r}") from None
    if number < 2:
        raise ActionInputError(f"input {name} must be at least 2, got {value!r}")
    return number


def parse_paths(value: str | None, name: str, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Absolute paths, one per line (or ``:``-separated), for the ``sandbox-paths`` input.

    Each path is resolved (``..``, doubled slashes and symbolic links) before it is judged: it
    may not be, contain or lie inside what the sandbox exists to keep away — the home folder,
    ``RUNNER_TEMP`` and the runner's folder above ``_work``, ``/root``, ``/run``, ``/var/run``,
    ``/proc``, ``/sys``, ``/dev``, ``/tmp`` — nor be a socket.

    Raises:
        ActionInputError: a relative path, or one that would open the sandbox (named).
    """
    import os
    import stat as stat_mod

    if value is None:
        return ()
    env = env or {}
    paths = [p.strip() for line in value.splitlines() for p in line.split(":") if p.strip()]
    guarded = {"/", "/root", "/run", "/var/run", "/proc", "/sys", "/dev", "/tmp", "/home"}
    for variable in ("HOME", "RUNNER_TEMP", "GITHUB_WORKSPACE"):
        if env.get(variable, "").startswith("/"):
            folder = os.path.realpath(env[variable])
            guarded.add(folder)
            if variable == "RUNNER_TEMP":  # <runner>/_work/_temp: the runner's folder holds its credentials
                guarded.add(str(Path(folder).parent.parent))
    resolved = []
    for path in paths:
        if not path.startswith("/") or "\x00" in path:
            raise ActionInputError(f"input {name} takes absolute paths, got {path!r}")
        real = os.path.realpath(path)
        for keep in sorted(guarded):
            overlaps = real == keep or real.startswith(keep.rstrip("/") + "/") or keep.startswith(real.rstrip("/") + "/")
            if overlaps and not (keep in ("/", "/home") and real != keep):
                raise ActionInputError(f"input {name} may not show {path!r} inside the sandbox (it is, holds or lies in "
                                       f"{keep}): name the folder the benchmarks need (e.g. /opt/conda)")
        try:
            if stat_mod.S_ISSOCK(os.stat(real).st_mode):
                raise ActionInputError(f"input {name} may not show the socket {path!r} inside the sandbox")
        except OSError:
            pass
        resolved.append(real)
    return tuple(dict.fromkeys(resolved))


#: The input that lets ``sandbox: none`` run inside GitHub Actions (:func:`check_no_sandbox`).
NO_SANDBOX_ACK = "unsafe-no-sandbox-job-is-read-only"

#: What a step's environment holds only when the workflow handed the job a credential beyond its
#: own token: the OIDC request (``permissions: id-token: write``: cloud roles) and upload-artifact's
#: runtime token (given to JavaScript actions only, so in a ``run`` step only when exported).
NO_SANDBOX_NEVER = ("ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
                    "ACTIONS_RUNTIME_TOKEN")


def check_no_sandbox(env: Mapping[str, str]) -> None:
    """May ``sandbox: none`` run here? (security review 2026-12-06, N1/F1)

    Without the sandbox the pull request's code runs as the runner's user beside the job's other
    steps and takes what they hold: the job's token (from checkout's post step), upload-artifact's
    ``ACTIONS_RUNTIME_TOKEN`` (artifact and Actions-cache writes: in every job), the runner's
    registration credentials, and ``BASH_ENV``/``LD_PRELOAD`` planted for later steps. perfgate
    cannot see the token's permissions from a step, so the rule is:

    - outside GitHub Actions (``GITHUB_ACTIONS`` is not ``true``: a developer's machine) it runs;
    - in a job whose step environment holds :data:`NO_SANDBOX_NEVER` it never runs (an OIDC
      request can mint cloud credentials; nothing makes giving that to a fork acceptable);
    - otherwise only with :data:`NO_SANDBOX_ACK` ``true``: the workflow's author states that the
      job's token is read-only and the runner ephemeral (a runner used for one job), and accepts
      that the code can write this job's artifacts and caches.

    Raises:
        ActionInputError: the refusal, saying why and what to do instead.
    """
    if env.get("GITHUB_ACTIONS", "").strip().lower() != "true":
        return
    held = [name for name in NO_SANDBOX_NEVER if env.get(name, "").strip()]
    bwrap = "Use sandbox: bwrap (on Kubernetes: deploy/kubernetes/runners/values.yaml runs it)"
    if held:
        raise ActionInputError(
            f"sandbox: none is refused: this job's steps hold {', '.join(held)}, which the pull "
            "request's code would take without the sandbox (an OIDC request mints cloud "
            f"credentials). {bwrap}, or remove id-token: write from this job's permissions and "
            "stop exporting ACTIONS_RUNTIME_TOKEN")
    if not parse_bool(get_input(env, NO_SANDBOX_ACK), NO_SANDBOX_ACK, False):
        raise ActionInputError(
            "sandbox: none is refused inside GitHub Actions: without the sandbox the pull "
            "request's code runs as the runner's user and takes this job's token, "
            "upload-artifact's ACTIONS_RUNTIME_TOKEN (artifact and cache writes) and a self-hosted "
            "runner's credentials, and can plant BASH_ENV or LD_PRELOAD for the later steps; "
            f"perfgate cannot see the token's permissions. {bwrap}, or, only if this job's "
            "permissions are read-only, the runner ephemeral and nothing runs after perfgate, set "
            f"{NO_SANDBOX_ACK}: true")


def parse_limits(env: Mapping[str, str]) -> tuple[tuple[str, float], ...]:
    """The sandbox's limits the workflow sets (:data:`runner.sandbox.limits.INPUTS`:
    ``sandbox-pids`` a whole number, ``sandbox-memory`` and ``sandbox-disk`` sizes such as
    ``64GiB``, ``sandbox-time`` a duration such as ``5h``), as ``(field, value)`` pairs of
    :class:`runner.sandbox.limits.Limits`; those not given take the machine's defaults.

    Raises:
        ActionInputError: a value that is not one, named with its input.
    """
    from runner.sandbox.limits import INPUTS, parse_duration, parse_size

    def count(text: str) -> int:
        if not text.isdigit() or int(text) < 16:
            raise ValueError(f"not a number of processes >= 16: {text!r}")
        return int(text)

    readers = {"pids": count, "memory": parse_size, "disk": parse_size, "wall": parse_duration}
    given = []
    for field_name, name in INPUTS.items():
        value = get_input(env, name)
        if value is not None:
            try:
                given.append((field_name, readers[field_name](value)))
            except ValueError as exc:
                raise ActionInputError(f"input {name}: {exc}") from None
    return tuple(given)

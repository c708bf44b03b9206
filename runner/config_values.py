"""The configuration's structured values, read and checked one by one (pure): runner groups
(``[runners.NAME]``), the ``[selection]`` table, the ``regression_webhook`` address.
:func:`runner.config.parse_table` calls them; each bad value is a :class:`~runner.errors.ConfigError`
naming the key. Also the one reading of a fraction (a threshold) written as text.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ConfigError
from .selection import Rules as SelectionRules


def read_fraction(text: str, *, percent: bool = True) -> float:
    """The number ``text`` writes, blanks around it ignored: ``0.02``, or with ``percent`` also
    ``2%`` or ``2 %`` (hundredths). How a threshold given as text is read: by the command line
    (``percent=False``), the Action's input and ``/perf run --threshold``; each checks the range
    with :func:`is_fraction` and words its own error.

    Raises:
        ValueError: not a number.
    """
    text = text.strip()
    return float(text[:-1]) / 100 if percent and text.endswith("%") else float(text)


def is_fraction(value: float, *, zero: bool = True) -> bool:
    """Whether ``value`` is a fraction in [0, 1), or in (0, 1) without ``zero``."""
    return (0 <= value if zero else 0 < value) and value < 1


#: At most this many runner groups (``[runners.NAME]``), each with at most this many labels.
MAX_RUNNER_GROUPS, MAX_RUNNER_LABELS = 8, 10

#: A runner group's name: what the App shows (a comment's table, the history series) and sends.
_RUNNER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")

#: A runner label as GitHub allows them (no comma: a label list travels comma-separated), ≤ 100.
_RUNNER_LABEL = re.compile(r"[^\s,\x00-\x1f\x7f]{1,100}")


#: A target architecture as ``gpu_arch`` names it: sm_80, sm_90a.
_ARCH = re.compile(r"sm_\d{2,3}a?")


def parse_gpu_arch(value: Any, where: str) -> tuple[str, ...]:
    """``gpu_arch`` (a list of architectures, runner.kernels) as a tuple.

    Raises:
        ConfigError: not a list of names like ``sm_90``.
    """
    if not (isinstance(value, list) and all(isinstance(v, str) and _ARCH.fullmatch(v) for v in value)):
        raise ConfigError(f'{where}: gpu_arch must be a list like ["sm_80", "sm_90"], got {value!r}')
    return tuple(value)


def parse_runners(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``[runners.NAME] labels = [...]`` → ``((NAME, (label, ...)), ...)`` (pure).

    Raises:
        ConfigError: not a table of tables, a bad or duplicate name, no or bad labels, more than
            :data:`MAX_RUNNER_GROUPS` groups or :data:`MAX_RUNNER_LABELS` labels, another key.
    """
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: runners must be tables, e.g. [runners.h100] with labels = [\"self-hosted\", \"h100\"]")
    if len(value) > MAX_RUNNER_GROUPS:
        raise ConfigError(f"{where}: at most {MAX_RUNNER_GROUPS} runner groups, got {len(value)}")
    groups = []
    for name, table in value.items():
        if not _RUNNER_NAME.fullmatch(str(name)):
            raise ConfigError(f"{where}: runner group name {str(name)[:40]!r} must be letters, digits, '_', '.' or "
                              "'-' (at most 32, starting with a letter or digit)")
        if not isinstance(table, dict) or set(table) - {"labels"}:
            raise ConfigError(f"{where}: [runners.{name}] takes one key, labels (a list of runner labels)")
        labels = table.get("labels")
        if not isinstance(labels, list) or not labels or len(labels) > MAX_RUNNER_LABELS or not all(
                isinstance(label, str) and _RUNNER_LABEL.fullmatch(label) for label in labels):
            raise ConfigError(f"{where}: [runners.{name}] labels must be a list of 1 to {MAX_RUNNER_LABELS} runner "
                              "labels (no spaces or commas), e.g. [\"self-hosted\", \"h100\"]")
        groups.append((str(name), tuple(labels)))
    return tuple(groups)


#: At most this many patterns in each list of ``[selection]``.
MAX_SELECTION_PATTERNS = 200


def parse_selection(value: Any, where: str) -> SelectionRules:
    """``[selection]`` → :class:`runner.selection.Rules` (pure).

    Raises:
        ConfigError: not a table, another key, ``enabled`` not a boolean, a list that is not of
            1–500-character strings or longer than :data:`MAX_SELECTION_PATTERNS`.
    """
    keys = ("enabled", "always", "full_run", "ignore")
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: selection must be a table, e.g. [tool.perfgate.selection] with enabled = true")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: [selection] has no key {unknown[0]!r} (known keys: {', '.join(keys)})")
    enabled = value.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: [selection] enabled must be true or false, got {enabled!r}")
    lists = {}
    for key in keys[1:]:
        items = value.get(key, [])
        if not isinstance(items, list) or len(items) > MAX_SELECTION_PATTERNS or not all(
                isinstance(i, str) and 0 < len(i) <= 500 for i in items):
            raise ConfigError(f"{where}: [selection] {key} must be a list of at most {MAX_SELECTION_PATTERNS} "
                              "non-empty patterns, e.g. [\"*.cu\", \"csrc/*\"]")
        lists[key] = tuple(items)
    return SelectionRules(enabled=enabled, **lists)


def check_webhook_url(url: str, where: str) -> str:
    """``url`` when it reads as an ``https://`` address with a host and no user or password (the
    App checks where the host resolves before each message, ``bot.app.core.notify``); "" stays "".

    Raises:
        ConfigError: any other scheme, no host, credentials in it, whitespace, over 2,000 characters.
    """
    if url == "":
        return url
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port
    except ValueError:
        host, parts = None, None
    if parts is None or len(url) > 2000 or any(ch.isspace() or ord(ch) < 32 for ch in url) or parts.scheme != "https" \
            or not host or parts.username is not None or parts.password is not None:
        raise ConfigError(f"{where}: regression_webhook must be an https:// URL with a host, no user or password "
                          "(e.g. a Slack incoming webhook)")
    return url

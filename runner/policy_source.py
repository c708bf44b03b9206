"""Where a compare's policy comes from: the base revision's configuration, never head's or the
working tree's (a pull request cannot change how it is judged), and what those would change.

:func:`head_changes` lists the keys head's configuration sets differently (recorded as
``settings.config_changed_by_head``); :func:`working_tree_notes` is the sentence a compare says
when the working tree's configuration differs and was not read. The keys and their parsing are
:mod:`runner.config`.
"""

from __future__ import annotations

from pathlib import Path

from .config import CONFIG_FILES, read_toml
from .errors import ConfigError


def _raw_table(root: Path) -> dict | None:
    """The perfgate table of the repository at ``root`` as written, unvalidated ({} without
    one); None when the file is not valid TOML."""
    try:
        for name in (n for n in CONFIG_FILES if (root / n).is_file()):
            if name != "pyproject.toml":
                return read_toml(root / name)
            table = read_toml(root / name).get("tool", {}).get("perfgate", {})
            return table if isinstance(table, dict) else None
    except ConfigError:
        return None
    return {}


def working_tree_notes(working_tree: str | Path, base: str | Path,
                       given: bool = False) -> list[str]:
    """A sentence when the working tree's configuration differs from the base revision's, which a
    compare reads instead (an edited or broken perfgate.toml was ignored without a word); none
    when the caller ``given`` a configuration (--config) or they agree."""
    if given or not (changed := head_changes(base, working_tree)):
        return []
    what = "is not valid TOML" if changed == ["*"] else f"sets {', '.join(changed)} differently"
    return [f"the configuration in the working tree {what} and is not read: a compare reads "
            "the base revision's, so a pull request cannot change how it is judged (commit it to "
            "the base branch, or pass --config FILE)"]


def head_changes(base: str | Path, head: str | Path) -> list[str]:
    """Keys whose value the head revision's configuration sets differently from the base's
    (added, removed or changed; sorted). ``["*"]`` when the head's file is not valid TOML."""
    base_table, head_table = _raw_table(Path(base)) or {}, _raw_table(Path(head))
    if head_table is None:
        return ["*"]
    keys = set(base_table) | set(head_table)
    return sorted(k for k in keys if base_table.get(k) != head_table.get(k))

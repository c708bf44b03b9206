"""Intent: which optimisation strategy a change intends, and intent vs measured impact.

Public interface (other parts of perfgate call these names):

* ``classify(title, body, labels, commit_messages, diff) -> dict``: the strategy
  (ids of ../shared/STRATEGIES.md, ``rules.STRATEGIES``), calibrated confidence, signals,
  candidates; ``classify_rules`` the same with the rules' uncalibrated ranking aid.
* ``from_git(repo, base, head) -> dict``: the same from the commits and diff between refs.
* ``main_intent(args)``: the ``perfgate intent`` command.
* ``STRATEGY_RISKS``, ``intent_vs_impact(intent, benchmarks)``, ``outcome_counts(records)``:
  the report section and the history statistics.

Modules: ``rules`` (taxonomy and signal patterns, data), ``diff`` (unified diff parsing,
code/comment/string masks), ``classifier`` (scoring), ``calibration`` (calibrated confidence
from ``calibration.json``, trained by evaluation/train_intent_model.py), ``impact`` (intent
vs impact, outcome counts), ``git`` (reading a change from git), ``cli`` (the command).
"""

from .classifier import classify, classify_rules
from .cli import main_intent, render_text
from .git import from_git, read_change
from .impact import STRATEGY_RISKS, intent_vs_impact, outcome_counts, outcome_of
from .rules import STRATEGIES, UNKNOWN

__all__ = [
    "STRATEGIES", "STRATEGY_RISKS", "UNKNOWN", "classify", "classify_rules", "from_git", "intent_vs_impact",
    "main_intent", "outcome_counts", "outcome_of", "read_change", "render_text",
]

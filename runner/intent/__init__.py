"""Intent: which optimisation strategy a change intends, and intent vs measured impact.

Public interface (other parts of perfgate call these names):

* ``classify(title, body, labels, commit_messages, diff) -> dict``: the strategy
  (ids of ../shared/STRATEGIES.md, ``rules.STRATEGIES``), calibrated confidence, signals,
  candidates; ``classify_rules`` the same with the rules' uncalibrated ranking aid.
* ``STRATEGY_RISKS``, ``intent_vs_impact(intent, benchmarks)``: the report section.
* ``git.from_git(repo, base, head) -> dict``: the same from the commits and diff between refs
  (imported from its module: it runs git); ``cli.main_intent(args)``: the ``perfgate intent``
  command.

Modules: ``rules`` (taxonomy and signal patterns, data), ``diff`` (unified diff parsing,
code/comment/string masks), ``classifier`` (scoring), ``calibration`` (calibrated confidence
from ``calibration.json``, trained by evaluation/train_intent_model.py), ``impact`` (intent
vs impact), ``git`` (reading a change from git), ``cli`` (the command). Importing this package
loads only the pure modules: the report renders intent without the classifier's shell.
"""

from .classifier import classify, classify_rules
from .impact import STRATEGY_RISKS, intent_vs_impact
from .rules import STRATEGIES, UNKNOWN

__all__ = ["STRATEGIES", "STRATEGY_RISKS", "UNKNOWN", "classify", "classify_rules", "intent_vs_impact"]

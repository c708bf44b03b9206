"""Intent: which optimisation strategy a change intends, and intent vs measured impact.

Public interface (other parts of perfgate call these names):

* ``classify(title, body, labels, commit_messages, diff) -> dict``: the strategy
  (ids of ../shared/STRATEGIES.md, ``rules.STRATEGIES``) named by the learned model, its
  confidence, the probability that the change is an optimisation, signals, candidates;
  ``classify_rules`` the hand rules alone, with their uncalibrated ranking aid.
* ``STRATEGY_RISKS``, ``intent_vs_impact(intent, benchmarks)``: the report section.
* ``git.from_git(repo, base, head) -> dict``: the same from the commits and diff between refs
  (imported from its module: it runs git); ``cli.main_intent(args)``: the ``perfgate intent``
  command.

Modules: ``rules`` (taxonomy and signal patterns, data), ``diff`` (unified diff parsing,
code/comment/string masks), ``classifier`` (the rules' evidence and scoring), ``features``
(words, diff tokens and rule scores of a change), ``model`` (the learned model of
``model.json``, trained by evaluation/train_intent_model.py: ``classify``), ``impact`` (intent
vs impact), ``git`` (reading a change from git), ``cli`` (the command). Importing this package
loads only the pure modules: the report renders intent without the classifier's shell.
"""

from .classifier import classify_rules
from .impact import STRATEGY_RISKS, intent_vs_impact
from .model import classify
from .rules import STRATEGIES, UNKNOWN

__all__ = ["STRATEGIES", "STRATEGY_RISKS", "UNKNOWN", "classify", "classify_rules", "intent_vs_impact"]

"""Intent: which optimisation strategy a change intends, and intent vs measured impact.

Public interface (other parts of perfgate call these names):

* ``name_strategy(title, body, labels, commit_messages, diff) -> dict``: a strategy (ids of
  ../shared/STRATEGIES.md, ``rules.STRATEGIES``) only where a hand rule measured at least 90 %
  precise on real pull requests backs it, else ``unknown`` (``precise``);
  ``classify_rules`` the hand rules' own ranking (``perfgate intent`` shows it, marked as such).
* ``STRATEGY_RISKS``, ``intent_vs_impact(intent, benchmarks)``: the report section.
* ``git.from_git(repo, base, head) -> dict``: the same from the commits and diff between refs
  (imported from its module: it runs git); ``cli.main_intent(args)``: the ``perfgate intent``
  command.

Modules: ``rules`` (taxonomy and signal patterns, data), ``diff`` (unified diff parsing,
code/comment/string masks), ``classifier`` (the rules' evidence and scoring), ``precise`` (the
rules measured precise, ``precise.json``), ``impact`` (intent vs impact), ``git`` (reading a
change from git), ``cli`` (the command). The learned classifier that guessed a strategy for
every change is evaluation-only (``evaluation/intent_model/``, issue 50). Importing this
package loads only the pure modules.
"""

from .classifier import classify_rules
from .impact import STRATEGY_RISKS, intent_vs_impact
from .precise import name_strategy
from .rules import STRATEGIES, UNKNOWN

__all__ = ["STRATEGIES", "STRATEGY_RISKS", "UNKNOWN", "classify_rules", "intent_vs_impact",
           "name_strategy"]

"""The learned intent classifier, evaluation-only since issue 50: ``model.py`` (the two linear
heads and the answer's words), ``features.py`` (what they read), ``model.json`` (the fitted
numbers, by evaluation/train_intent_model.py). The product names a strategy only from a hand
rule measured precise on real pull requests (``runner.intent.precise``); this package is what
evaluation/intent.py and intent_real.py score, and what the model's tests pin."""

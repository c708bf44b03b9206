"""The perfgate GitHub Action (``python -m action``; ``action.yml`` at the repository root).

Modules: ``environment`` (the Actions environment → a plan, pure), ``git_shas`` (both commits
in the checkout), ``compare`` (``perfgate compare`` as a subprocess), ``publish`` (summary,
outputs, comment text), ``github_gateway`` (the only code that talks to GitHub).
"""

"""The fake GitHub's own tests and its pytest fixtures (the fake itself: testkit/fake_github)."""

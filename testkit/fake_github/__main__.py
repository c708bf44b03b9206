"""Prefetch GitHub's OpenAPI description for the fake (CI runs this before pytest):
``python -m testkit.fake_github`` prints the cached file's path; exit 1 if it cannot be had."""

import sys

from .spec import SpecUnavailable, openapi_path

try:
    print(openapi_path())
except SpecUnavailable as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(1)

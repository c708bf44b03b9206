"""Reports of a results document: the registered formats (:mod:`.formats`: Markdown, HTML, the
terminal's text), rendered and written by :mod:`.render`, the templates' environment
(:mod:`.templating`), terminal tables (:mod:`.terminal`), pictures (:mod:`.plots`), the shared view
(:mod:`.view`), units in words (:mod:`.units`) and the escaping of untrusted text for each place it
is shown (:mod:`.escape`).

Reads the results document alone and imports no torch, numpy or scipy: the App and the Action
render with it.
"""

from .formats.md import cut_markdown
from .render import COMMENT_LIMIT, MARKER, SUMMARY_LIMIT, render
from .templating import environment
from .terminal import print_run_table, print_table, render_terminal

__all__ = ["COMMENT_LIMIT", "MARKER", "SUMMARY_LIMIT", "cut_markdown", "environment", "render", "print_run_table",
           "print_table", "render_terminal"]

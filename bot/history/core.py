"""Regression history, the pure part: fingerprints, points, series, noise, alerts, replies —
:mod:`.points`, :mod:`.series` and :mod:`.texts`, whose names this module gathers for its importers.

Plain data in, plain data out; no database, no Flask. ``bot.history.store`` is the shell
that reads and writes the tables and calls these.

Terms: a *point* is one benchmark's value of one measure in one result: ``time``, its median
time per call (seconds) with the confidence interval of that median, or ``memory``, its peak
memory (bytes: the median over its processes, with their range; :data:`MEASURES`). A *series* is
the ``main`` points (single-revision ``perfgate run`` results, i.e. history runs on the default
branch) of one (repository, benchmark, measure, environment fingerprint), in measurement order. PR results are points of kind
``pr``: drawn as separate markers, never part of a series. A new fingerprint starts a new
series, so an upgraded driver or another GPU model is never reported as a regression.
"""

from __future__ import annotations

from .points import (MEASURES, Fingerprint, PointRecord, fingerprint_of, is_repository_name, iso,  # noqa: F401
                     parse_time, points_of, pull_request_of, result_kind)
from .series import (MIN_NOISE_PAIRS, NOISE_QUANTILE, RECOVERY_TOLERANCE, ChangePoint, Point, Series,  # noqa: F401
                     alert_accuracy, carry_forward, classify_alerts, fingerprint_changes, historical_noise,
                     order_points, prs_merged_between, within_noise)
from .texts import (RECENT_CHANGE_POINTS, bench_url, history_table_markdown, regression_note,  # noqa: F401
                    repository_overview, series_json, series_named)

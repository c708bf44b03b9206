"""The regression history: results over time per benchmark and environment, change points,
alerts and their outcomes (``points``, ``series``, ``texts``, ``changepoints``, ``chart``: pure),
stored in ``tables`` through ``store`` (writes) and ``reads``; ``cli`` is ``perfgate history``.

Terms: a *point* is one benchmark's value of one measure in one result: ``time``, its median
time per call (seconds) with the confidence interval of that median, or ``memory``, its peak
memory (bytes: the median over its processes, with their range; ``points.MEASURES``). A *series*
is the ``main`` points (single-revision ``perfgate run`` results, i.e. history runs on the default
branch) of one (repository, benchmark, measure, environment fingerprint), in measurement order.
PR results are points of kind ``pr``: drawn as separate markers, never part of a series. A new
fingerprint starts a new series, so an upgraded driver or another GPU model is never reported as
a regression.
"""

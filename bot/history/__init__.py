"""The regression history: results over time per benchmark and environment, change points,
alerts and their outcomes (``core``, ``changepoints``, ``chart``: pure), stored in ``tables``
through ``store``; ``cli`` is ``perfgate history``."""

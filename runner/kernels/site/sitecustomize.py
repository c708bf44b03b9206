"""Installs the launch capture (:mod:`runner.kernels.capture`) in a process started by
``perfgate kernels --capture``: this folder goes first on its ``PYTHONPATH``."""

import os

if os.environ.get("PERFGATE_TRITON_CAPTURE"):
    try:
        from runner.kernels.capture import install

        install(os.environ["PERFGATE_TRITON_CAPTURE"])
    except ImportError:  # Triton (or perfgate) not importable there: nothing is captured
        pass

"""Helpers that more than one test folder (or a benchmark) uses, in one place.

Importable as ``support.<module>``: pytest puts ``tests/`` on ``sys.path`` (the rootdir
conftest, tests/conftest.py, has no package above it), and a script that a test starts
as its own process is given ``PYTHONPATH`` with ``tests/`` (``support.paths.child_env``).
"""

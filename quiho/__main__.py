"""``python -m quiho``: the same as the ``quiho`` command."""

from quiho.cli.main import entry

entry()

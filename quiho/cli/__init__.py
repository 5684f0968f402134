"""Thin command-line layer: parses options, calls the library, renders results.

Only this package imports typer, prints, or exits.
"""

from quiho.cli.main import app, main

__all__ = ["app", "main"]

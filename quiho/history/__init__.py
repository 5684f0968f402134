"""quiho.history (see the package docstring of quiho)."""

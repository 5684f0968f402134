"""quiho.trace (see the package docstring of quiho)."""

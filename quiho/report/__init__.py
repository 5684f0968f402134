"""quiho.report (see the package docstring of quiho)."""

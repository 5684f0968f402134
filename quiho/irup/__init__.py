"""quiho.irup (see the package docstring of quiho)."""

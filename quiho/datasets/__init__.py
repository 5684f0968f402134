"""quiho.datasets (see the package docstring of quiho)."""

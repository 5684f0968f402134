"""quiho.models (see the package docstring of quiho)."""

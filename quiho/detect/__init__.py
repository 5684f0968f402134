"""quiho.detect (see the package docstring of quiho)."""

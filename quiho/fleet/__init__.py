"""quiho.fleet (see the package docstring of quiho)."""

"""The quiho store: one SQLite file holding hosts, fingerprints, runs and results."""

from quiho.store._db import Store, default_store_path, open_store, register_component, utcnow

__all__ = ["Store", "open_store", "default_store_path", "register_component", "utcnow"]

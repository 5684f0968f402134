"""The quiho store: a SQLite file or a PostgreSQL database holding hosts, fingerprints, runs and results.

This package is the only place that talks SQL (``tests/store/test_layering.py`` checks it). Other packages open
a :class:`Store` here and call the typed query functions of one module per table family:
:mod:`quiho.store.fleet` (hosts, fingerprint and application runs of a fleet, profiles),
:mod:`quiho.store.imports` (whole runs from imported files or generated data sets),
:mod:`quiho.store.irup` (IRUP training data and recorded IRUPs), :mod:`quiho.store.history` (series,
revisions, points), :mod:`quiho.store.alerts` (regression alerts of series, its own component) and
:mod:`quiho.store.traces` (traced runs). ``_db`` (connection, migrations) and
``_schema`` (the tables) are private to the store.
"""

from quiho.store._db import Store, default_store_path, open_store, register_component, utcnow
from quiho.store._location import StoreLocation, parse_location

__all__ = ["Store", "open_store", "default_store_path", "register_component", "utcnow", "StoreLocation",
           "parse_location"]

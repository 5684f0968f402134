"""The quiho store: a SQLite file or a PostgreSQL database holding hosts, fingerprints, runs and results.

This package is the only place that talks SQL (``tests/shared/test_layering.py`` checks it). Other packages open
a :class:`Store` here and call the typed query functions of one module per stored thing, named after it, so
"where are X saved?" has one answer: :mod:`~quiho.store.hosts`, :mod:`~quiho.store.fingerprints`,
:mod:`~quiho.store.app_runs`, :mod:`~quiho.store.profiles`, :mod:`~quiho.store.calibrations`,
:mod:`~quiho.store.history`, :mod:`~quiho.store.alerts`, :mod:`~quiho.store.traces` and
:mod:`~quiho.store.irup`; :mod:`~quiho.store.imports` and :mod:`~quiho.store.popper` write whole imported runs.
``README.md`` here has the entity diagram. ``_db`` (connection, migrations) and ``_schema`` (the tables) are
private to the store.
"""

from quiho.store._db import Store, default_store_path, open_store, register_component, utcnow
from quiho.store._location import StoreLocation, parse_location

__all__ = ["Store", "open_store", "default_store_path", "register_component", "utcnow", "StoreLocation",
           "parse_location"]

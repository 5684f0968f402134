"""quiho: what resource an application leans on, and what changed between two versions.

The public API is re-exported here; subpackages hold one concept each
(``fleet``, ``fingerprint``, ``irup``, ``trace``, ``models``, ``detect``,
``history``, ``report``, ``store``, ``cli`` ...).

Packages stand on floors: each imports only those listed beside it (bottom up; besides itself, ``quiho.errors``
and the shared ``quiho/_x.py`` helpers), so no two import each other (``tests/shared/test_layering.py`` holds
the list as data and checks it; ``docs/architecture.md`` explains it)::

    store        -
    fleet        store
    testing      fleet
    app          fleet, store
    fingerprint  fleet, store
    models       -
    design       -
    detect       models
    irup         fingerprint, store
    history      fingerprint, store
    trace        app, detect, fleet, store
    schedule     fingerprint, fleet, history, irup, store
    datasets     design, detect, history, irup, store
    profile      app, design, detect, fingerprint, fleet, irup, schedule, store, trace
    publish      fleet, history, irup, profile, schedule, store
    report       design, irup, profile
    cli          app, datasets, design, detect, fingerprint, fleet, history, irup, models, profile,
                 publish, report, schedule, store, trace
"""

from quiho._version import __version__
from quiho.errors import QuihoError
from quiho.store import Store, open_store

__all__ = ["__version__", "QuihoError", "Store", "open_store"]

"""quiho: what resource an application leans on, and what changed between two versions.

The public API is re-exported here; subpackages hold one concept each
(``fleet``, ``fingerprint``, ``irup``, ``trace``, ``models``, ``detect``,
``history``, ``report``, ``store``, ``cli``).
"""

from quiho._version import __version__
from quiho.errors import QuihoError
from quiho.store import Store, open_store

__all__ = ["__version__", "QuihoError", "Store", "open_store"]

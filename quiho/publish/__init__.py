"""``quiho publish``: the whole store as one static site (series, fleet, profiles, what changed recently).

:func:`publish` reads the store through its public query functions, renders every page as text (inline SVG,
no matplotlib), and writes only the files whose bytes changed. Pages are complete without JavaScript and in
grey scale; every name is escaped (:mod:`quiho.publish._safe`) and every file name is a hash, never a name.
"""

from quiho.publish._irups import save_advice
from quiho.publish._site import MANIFEST, publish, render_site
from quiho.publish.options import IrupSettings, PublishOptions, PublishResult

__all__ = ["publish", "render_site", "PublishOptions", "PublishResult", "IrupSettings", "MANIFEST", "save_advice"]

"""Which revisions to measure: a Gaussian process over revision order, active sampling and GP bisection.

``_kernels`` holds the Brownian-motion kernel, ``_gp`` the model (:class:`HistoryGP`, :data:`KERNELS`), and
``_sampling`` the two searches: :func:`sample_revisions` (measure where the posterior is least sure) and
:func:`gp_bisect` (locate one change with fewer builds than plain bisection).
"""

from quiho.history.sampling._gp import KERNELS, HistoryGP, mape
from quiho.history.sampling._kernels import BrownianKernel
from quiho.history.sampling._sampling import (
    STRATEGIES,
    BisectPlan,
    BisectResult,
    SamplingPlan,
    SamplingResult,
    gp_bisect,
    noise_of_means,
    plain_bisection_builds,
    sample_revisions,
)

__all__ = [
    "BrownianKernel",
    "HistoryGP",
    "KERNELS",
    "mape",
    "STRATEGIES",
    "SamplingPlan",
    "BisectPlan",
    "SamplingResult",
    "BisectResult",
    "sample_revisions",
    "gp_bisect",
    "plain_bisection_builds",
    "noise_of_means",
]

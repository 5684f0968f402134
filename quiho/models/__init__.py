"""Models of duration against an independent variable: parametric families and non-parametric curves.

Parametric fits share one objective (least squares in y space) so R², AIC and BIC compare across
families; non-parametric fits are regressograms, moving averages and Nadaraya-Watson kernel regression.
"""

from quiho.models._kernel import KERNELS, kernel_regression, select_bandwidth
from quiho.models._nonparametric import BIN_RULES, CurveFit, moving_average, r_squared, regressogram
from quiho.models._parametric import FAMILIES, ModelFit, ParametricFits, fit_family, fit_parametric

__all__ = [
    "BIN_RULES",
    "FAMILIES",
    "KERNELS",
    "CurveFit",
    "ModelFit",
    "ParametricFits",
    "fit_family",
    "fit_parametric",
    "kernel_regression",
    "moving_average",
    "r_squared",
    "regressogram",
    "select_bandwidth",
]

"""Designed fleets: hosts that differ by known factors, and what each factor does to a version.

On such a fleet (the calibrated local fleet, or an inventory whose hosts carry ``quiho_factors``) quiho sets the
conditions itself, so it can measure each version's response to each one directly: :func:`analyse_design`. This
is an analysis package: the fleet layer does not import it.
"""

from quiho.design.analysis import ClassStory, DesignAnalysis, analyse_design, effect_table
from quiho.design.effects import AxisClass, DesignSettings, Effect, VersionEffects
from quiho.design.factors import Factor, FactorTable, factor_table, local_fleet_vars

__all__ = ["analyse_design", "DesignAnalysis", "ClassStory", "effect_table", "AxisClass", "DesignSettings",
           "Effect", "VersionEffects", "Factor", "FactorTable", "factor_table", "local_fleet_vars"]

"""Fleet execution: Ansible playbooks run on an inventory (real hosts over SSH, or the local fleet).

This is an execution layer: it imports only :mod:`quiho.store`, :mod:`quiho.errors` and shared helpers, never an
analysis package (``tests/shared/test_layering.py``). What runs on a fleet lives with its concept:
:func:`quiho.fingerprint.fingerprint`, :func:`quiho.app.run_app`, :func:`quiho.trace.fleet.run_fleet_traces`.
"""

from quiho.fleet.inventory import FleetHost, Inventory, load_inventory, local_inventory_path
from quiho.fleet.runner import FleetEvent, PlaybookResult, run_playbook
from quiho.fleet.session import FleetAccess, FleetSession, measuring
from quiho.fleet.show import FleetHostInfo, fleet_show

__all__ = [
    "FleetAccess",
    "FleetEvent",
    "FleetHost",
    "FleetHostInfo",
    "FleetSession",
    "Inventory",
    "PlaybookResult",
    "fleet_show",
    "load_inventory",
    "local_inventory_path",
    "measuring",
    "run_playbook",
]

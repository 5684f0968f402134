"""Fleet execution: fingerprints and application runs on Ansible inventories (real hosts or the local fleet)."""

from quiho.fleet.app import AppRun, AppSpec, load_app_spec, run_app
from quiho.fleet.calibrate import Calibration, calibrate, resolve_inventory
from quiho.fleet.fingerprint import FingerprintRun, HostReport, fingerprint
from quiho.fleet.inventory import FleetHost, Inventory, load_inventory, local_inventory_path
from quiho.fleet.runner import FleetEvent, PlaybookResult, run_playbook
from quiho.fleet.session import FleetSession, measuring
from quiho.fleet.show import FleetHostInfo, fleet_show

__all__ = [
    "AppRun",
    "AppSpec",
    "Calibration",
    "FingerprintRun",
    "FleetEvent",
    "FleetHost",
    "FleetHostInfo",
    "FleetSession",
    "HostReport",
    "Inventory",
    "PlaybookResult",
    "calibrate",
    "fingerprint",
    "fleet_show",
    "load_app_spec",
    "load_inventory",
    "local_inventory_path",
    "measuring",
    "resolve_inventory",
    "run_app",
    "run_playbook",
]

"""The local fleet: localhost "hosts" that differ by emulated resources, calibrated to the machine at hand.

The first kind of fleet: :mod:`~quiho.fleet.local.emulate` sets a host's factors (CPU quota, page size, a memory
co-runner), :mod:`~quiho.fleet.local.probes` times fixed work in emulated cells, and
:mod:`~quiho.fleet.local.calibrate` keeps the axes that measurably move what they should on this machine.
Import the modules themselves: this package's ``__init__`` stays empty because the fleet's session imports
:mod:`~quiho.fleet.local.emulate` while :mod:`~quiho.fleet.local.calibrate` imports the session.
"""

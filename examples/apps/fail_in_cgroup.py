"""Test app: exits 3 (with a message on stderr) when run inside a cgroup whose name contains argv[1].

Lets a fleet test make exactly one emulated host fail, to check that the others are kept.
"""

import sys

marker = sys.argv[1]
with open("/proc/self/cgroup") as fh:
    groups = fh.read()
if marker in groups:
    sys.stderr.write(f"fail_in_cgroup: refusing to run in a cgroup named like {marker!r}\n")
    sys.exit(3)
print("ok")

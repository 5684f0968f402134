"""Test support shipped with the library: real fleets for tests and benches (sshd hosts in network namespaces)."""

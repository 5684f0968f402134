"""Kernel-entry knob of the local fleet: install a seccomp filter of N allow rules, then exec the command.

Usage: python3 quiho-seccomp.py N COMMAND [ARG ...]

Every rule compares the system call's first argument with a value it never has, and the filter ends in "allow":
the command's behaviour is unchanged, each of its system calls costs N more filter instructions. The rules read
an argument, not only the call's number, so the kernel cannot prove the filter constant and skip it (the seccomp
action cache of Linux >= 5.11). The filter is inherited by every child and survives exec.
"""

import ctypes
import os
import struct
import sys

BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000
ARG0_LOW = 16  # offsetof(struct seccomp_data, args[0])
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
MAX_RULES = 4000  # BPF_MAXINSNS is 4096 per filter


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit() or not 0 <= int(argv[0]) <= MAX_RULES:
        sys.stderr.write(f"quiho-seccomp: usage: quiho-seccomp.py N(0..{MAX_RULES}) COMMAND [ARG ...]\n")
        return 2
    n, cmd = int(argv[0]), argv[1:]
    if n:
        ins = [struct.pack("HBBI", BPF_LD_W_ABS, 0, 0, ARG0_LOW)]
        ins += [struct.pack("HBBI", BPF_JEQ_K, 0, 0, 0x51ED0000 + i) for i in range(n)]
        ins.append(struct.pack("HBBI", BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
        buf = ctypes.create_string_buffer(b"".join(ins))
        prog = _Prog(len(ins), ctypes.addressof(buf))
        libc = ctypes.CDLL(None, use_errno=True)
        for call, args in (("no_new_privs", (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)),
                           ("seccomp filter", (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0))):
            if libc.prctl(*args) != 0:
                sys.stderr.write(f"quiho-seccomp: {call}: {os.strerror(ctypes.get_errno())}\n")
                return 1
    try:
        os.execvp(cmd[0], cmd)
    except OSError as exc:
        sys.stderr.write(f"quiho-seccomp: {cmd[0]}: {exc.strerror}\n")
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

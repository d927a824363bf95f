#!/usr/bin/env python3
"""Summarises the profile phase of benches/proxy.sh into rows of its results.jsonl.

    proxy_profile.py perf DATA --path P --of throughput|ping --round R --results RESULTS --text OUT
    proxy_profile.py strace OUT --path P --round R --pings N --results RESULTS

`perf`: reads a `perf record` of the proxy process (`perf script`), puts each sample in one
category by its leaf symbol (and, in the kernel, by the system call its kernel call chain is
in), and appends one row {"phase": "profile", "of": ..., "samples", "categories": {name:
share}, "top": [[symbol, share], ...]} to RESULTS; OUT gets `perf report --no-children`'s
flat summary, for reading by hand. The perf.data file is left to the caller to delete.

`strace`: reads `strace -c -f` of the proxy process over N pings and appends {"phase":
"syscalls", "pings": N, "calls": {syscall: calls}}.

The categories (in the order the report shows them):
"""
import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict

# Kernel functions whose presence in a sample's kernel call chain says which system call
# (or other kernel path) the sample is in, tried in this order.
KERNEL_PATHS = [
    ("kernel: socket send", re.compile(
        r"^(__sys_sendto|__sys_sendmsg|___sys_sendmsg|__sys_sendmmsg|sock_sendmsg|tcp_sendmsg(_locked)?|"
        r"sock_write_iter|ksys_write|vfs_write|do_writev|vfs_writev|do_splice|__do_splice|splice_.*)$")),
    ("kernel: socket receive", re.compile(
        r"^(__sys_recvfrom|__sys_recvmsg|___sys_recvmsg|sock_recvmsg|tcp_recvmsg(_locked)?|sock_read_iter|"
        r"ksys_read|vfs_read|do_readv|vfs_readv)$")),
    ("kernel: epoll", re.compile(r"^(do_epoll_wait|do_epoll_pwait.*|ep_poll|do_epoll_ctl|__x64_sys_epoll_.*)$")),
    ("kernel: futex, scheduling", re.compile(
        r"^(do_futex|futex_.*|__x64_sys_futex|__x64_sys_sched_yield|do_sched_yield)$")),
    ("kernel: memory (faults, mmap)", re.compile(
        r"^(asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|__x64_sys_mmap|"
        r"__x64_sys_munmap|__vm_munmap|__x64_sys_madvise|do_madvise|__x64_sys_brk|__x64_sys_mprotect|"
        r"__x64_sys_mremap|do_mmap|do_vmi_munmap)$")),
]
# A kernel leaf in one of these copies a socket's bytes between user space and the kernel.
KERNEL_COPY = re.compile(
    r"^(rep_movs_alternative|copy_user_.*|_copy_to_iter|_copy_from_iter|copy_to_user.*|copy_from_user.*|"
    r"__copy_.*|skb_copy_datagram_iter|__skb_datagram_iter|simple_copy_to_iter|copyout|copyin|"
    r"memcpy_orig|memcpy_erms|__memcpy|memcpy|copy_page_.*|csum_partial_copy.*|skb_do_copy_data_nocache)$")
# A kernel leaf in the system call entry and exit code.
KERNEL_ENTRY = re.compile(
    r"^(entry_SYSCALL_64.*|syscall_return_via_sysret|do_syscall_64|syscall_exit_to_user_mode.*|"
    r"exit_to_user_mode.*|__entry_text_.*|entry_SYSRETQ.*|srso_.*|retbleed_.*|clear_bhb_loop|"
    r"x64_sys_call|syscall_enter_from_user_mode.*|fpregs_assert_state_consistent|__x64_sys_.*)$")
SYSCALL = re.compile(r"^(do_syscall_64|entry_SYSCALL_64.*)$")

USER = [
    ("memmove/memcpy", re.compile(r"^(__)?(memmove|memcpy|mempcpy)(_|$)|^__mem(move|cpy)_")),
    ("memset", re.compile(r"^(__)?memset(_|$)|^__memset_|^__bzero")),
    ("AES/GHASH", re.compile(r"(?i)aesni|_aes_|aes_gcm|gcm_|ghash|clmul|vpaes|ring::aead")),
    ("CRC-32C", re.compile(r"(?i)crc32c|records::crc|crc_u64")),
    ("allocation", re.compile(
        r"^(__libc_)?(malloc|free|calloc|realloc|cfree)$|^_int_(malloc|free|realloc)|^malloc_|^tcache_|"
        r"^unlink_chunk|^sysmalloc|^__rust_(alloc|dealloc|realloc|alloc_zeroed)|^__rdl_|^alloc::alloc::|"
        r"^arena_get|^systrim|^grow_heap|^__default_morecore|^alloc::raw_vec::.*(grow|finish_grow)")),
]
OWN = "the proxy's own code"
TOKIO = "tokio (runtime, I/O driver)"
OTHER = "other"
CATEGORIES = ([name for name, _ in KERNEL_PATHS[:2]] + ["kernel: socket data copies"]
              + [name for name, _ in KERNEL_PATHS[2:]]
              + ["kernel: syscall entry/exit, other syscalls", "kernel: other"]
              + [name for name, _ in USER] + [TOKIO, OWN, OTHER])
__doc__ += "".join(f"\n- {c}" for c in CATEGORIES) + "\n"


def own_dso(dso):
    """Whether a shared object is the proxy's own program (kwire, the library's bench
    program, haproxy)."""
    base = dso.rsplit("/", 1)[-1]
    return base == "kwire" or base.startswith("proxy_filter") or base.startswith("haproxy")


def category(frames):
    """frames: [(symbol, dso)], leaf first; the kernel's frames first when it was in it."""
    sym, dso = frames[0]
    if dso == "[kernel.kallsyms]" or dso.startswith("[kernel"):
        names = [s for s, d in frames if d.startswith("[kernel")]
        leaf = names[0]
        for name, pattern in KERNEL_PATHS:
            if any(pattern.match(n) for n in names):
                if name in ("kernel: socket send", "kernel: socket receive") and KERNEL_COPY.match(leaf):
                    return "kernel: socket data copies"
                return name
        if KERNEL_ENTRY.match(leaf) or any(SYSCALL.match(n) for n in names):
            return "kernel: syscall entry/exit, other syscalls"
        return "kernel: other"
    for name, pattern in USER:
        if pattern.search(sym):
            return name
    if "kwire::" in sym or (own_dso(dso) and not re.match(r"^(<)?(tokio|mio|std|core|alloc)::", sym)):
        return OWN
    if re.match(r"^(<)?(tokio|mio)::", sym) or "tokio::" in sym[:40]:
        return TOKIO
    return OTHER


def short(sym, dso):
    if dso.startswith("[kernel"):
        return f"[k] {sym}"
    if sym in ("[unknown]", ""):
        return f"[{dso.rsplit('/', 1)[-1]}, no symbol]"
    sym = re.sub(r"::h[0-9a-f]{16}$", "", sym)
    return sym if len(sym) <= 90 else sym[:87] + "..."


def samples(data):
    """Yields (period, frames) for each sample of a perf.data file."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "period,ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    line_re = re.compile(r"^\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
    for block in out.split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines:
            continue
        head = lines[0].split(None, 1)
        try:
            period = int(head[0])
        except ValueError:
            continue
        frames = []
        # Without call chains the leaf is on the period's line.
        for ln in ([head[1]] if len(head) > 1 else []) + lines[1:]:
            m = line_re.match(ln)
            if m:
                # Without the offset and a symbol version (`free@GLIBC_2.2.5`).
                sym = re.sub(r"(@\S*)?\+0x[0-9a-f]+$|@\S*$", "", m.group(2))
                frames.append((sym, m.group(3)))
        if frames:
            yield period, frames


def perf_summary(args):
    total = 0
    cats = defaultdict(int)
    syms = defaultdict(int)
    n = 0
    for period, frames in samples(args.data):
        n += 1
        total += period
        cats[category(frames)] += period
        syms[short(*frames[0])] += period
    if not n:
        sys.exit(f"{args.data}: no samples")
    row = {
        "round": args.round, "path": args.path, "conns": "few", "phase": "profile", "of": args.of,
        "samples": n, "cpu_s": total / 1e9,
        "categories": {c: round(cats[c] / total, 4) for c in CATEGORIES if cats[c]},
        "top": [[s, round(v / total, 4)] for s, v in sorted(syms.items(), key=lambda kv: -kv[1])[:args.top]],
    }
    with open(args.results, "a") as f:
        f.write(json.dumps(row) + "\n")
    if args.text:
        report = subprocess.run(["perf", "report", "-i", args.data, "--no-children", "--stdio", "-g", "none",
                                 "--sort", "dso,sym", "--percent-limit", "0.5"],
                                capture_output=True, text=True).stdout
        with open(args.text, "w") as f:
            f.write(report)


def strace_summary(args):
    calls = {}
    with open(args.out) as f:
        for line in f:
            parts = line.split()
            # % time, seconds, usecs/call, calls, [errors,] syscall
            if len(parts) >= 5 and re.match(r"^[0-9.]+$", parts[0]) and parts[-1] != "total":
                try:
                    calls[parts[-1]] = int(parts[3])
                except ValueError:
                    continue
    if not calls:
        sys.exit(f"{args.out}: no system calls counted")
    row = {"round": args.round, "path": args.path, "conns": "few", "phase": "syscalls", "pings": args.pings,
           "calls": calls}
    with open(args.results, "a") as f:
        f.write(json.dumps(row) + "\n")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("perf")
    p.add_argument("data")
    p.add_argument("--path", required=True)
    p.add_argument("--of", required=True, choices=["throughput", "ping"])
    p.add_argument("--round", type=int, required=True)
    p.add_argument("--results", required=True)
    p.add_argument("--text")
    p.add_argument("--top", type=int, default=8)
    s = sub.add_parser("strace")
    s.add_argument("out")
    s.add_argument("--path", required=True)
    s.add_argument("--round", type=int, required=True)
    s.add_argument("--pings", type=int, required=True)
    s.add_argument("--results", required=True)
    args = ap.parse_args()
    perf_summary(args) if args.cmd == "perf" else strace_summary(args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the proxy section of docs/benchmarks.md from a run of benches/proxy.sh.

Reads target/bench-proxy/results.jsonl (one JSON object per phase, written by proxy.sh) and
replaces what lies between `<!-- proxy:begin -->` and `<!-- proxy:end -->` in
docs/benchmarks.md: the per-path tables, the memory table, the moderate load's latencies and
the targets, each figure from
this run; and, from the profile phase's rows (benches/proxy_profile.py), where each proxy's
CPU goes, its system calls per ping, and for each missed target the categories that make
its difference with haproxy. The run's conditions (commit, load average) go to stderr, never into the doc.

    python3 benches/proxy_report.py [RESULTS] [--doc docs/benchmarks.md] [--print]
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_profile import CATEGORIES  # noqa: E402  (the profile's categories, in order)

NAMES = {
    "direct": "direct",
    "haproxy": "haproxy (tcp)",
    "kwire": "kwire proxy (text log)",
    "quiet": "kwire proxy --quiet",
    "base": "base build --quiet (KWIRE_BASE)",
    "tenant": "kwire proxy --quiet, one tenant",
    "filter": "library + example filter, no log",
    "library": "library, no filter, no log",
    "validate": "kwire proxy --quiet --validate (JSON values)",
    "encrypt": "kwire proxy --quiet --encrypt (every value)",
}
ORDER = list(NAMES)


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Run:
    def __init__(self, rows):
        self.rows = rows
        self.rounds = sorted({r["round"] for r in rows})
        self.paths = [p for p in ORDER if any(r["path"] == p for r in rows)]
        conns = {r["conns"] for r in rows if "conns" in r}
        self.idle = sorted(c for c in conns if c != "few")

    def get(self, rnd, path, conns, phase):
        for r in self.rows:
            if r["round"] == rnd and r["path"] == path and r.get("conns") == conns and r["phase"] == phase:
                return r
        return None

    @staticmethod
    def mbytes(r):
        x = r["load"]
        return (x["produced_records"] + x["consumed_records"]) * 1024 / 1e6

    @staticmethod
    def mbps(r):
        x = r["load"]
        return x["produce_mb_per_s"] + x["consume_mb_per_s"]

    def cpu_per_mb(self, rnd, path, conns):
        r = self.get(rnd, path, conns, "throughput")
        if r is None or self.mbytes(r) == 0:
            return None
        return r["proxy_cpu_s"] / self.mbytes(r) * 1e3

    def added_p99_ms(self, rnd, path):
        """Produce p99 at the moderate load through `path` minus direct's, same round (ms)."""
        m, d = self.get(rnd, path, "few", "moderate"), self.get(rnd, "direct", "few", "moderate")
        if m is None or d is None or "produce_p99_us" not in m["load"] or "produce_p99_us" not in d["load"]:
            return None
        return (m["load"]["produce_p99_us"] - d["load"]["produce_p99_us"]) / 1e3

    def cpu_per_ping(self, rnd, path, conns):
        r = self.get(rnd, path, conns, "ping")
        if r is None or not r["load"].get("requests"):
            return None
        return r["proxy_cpu_s"] / r["load"]["requests"] * 1e6


def ratio_text(values):
    values = [v for v in values if v is not None]
    if not values:
        return "not measured"
    lo, hi = min(values), max(values)
    return f"{lo:.2f}×" if abs(hi - lo) < 0.005 else f"{lo:.2f}-{hi:.2f}×"


def ratios(run, path, measure, conns="few"):
    out = []
    for rnd in run.rounds:
        a, h = measure(rnd, path, conns), measure(rnd, "haproxy", conns)
        out.append(a / h if a is not None and h else None)
    return out


# The CPU targets: label, path, what is measured (per MB or per ping), the limit.
CPU_TARGETS = [
    ("CPU per MB with tenants ≤ 1.1× haproxy", "tenant", "mb", 1.1),
    ("CPU per small request with `kwire proxy --quiet` ≤ 1.5× haproxy", "quiet", "ping", 1.5),
    ("CPU per small request, the library with no filter and no log ≤ 1.2× haproxy", "library", "ping", 1.2),
    ("CPU per MB with every value encrypted ≤ 2× haproxy", "encrypt", "mb", 2.0),
]


def measure_of(run, kind):
    return run.cpu_per_mb if kind == "mb" else run.cpu_per_ping


def missed(run):
    """The CPU targets measured and missed in this run: (label, path, kind)."""
    out = []
    for label, path, kind, limit in CPU_TARGETS:
        if path not in run.paths or "haproxy" not in run.paths:
            continue
        rs = [r for r in ratios(run, path, measure_of(run, kind)) if r is not None]
        if rs and max(rs) > limit:
            out.append((label, path, kind))
    return out


def targets(run):
    rows = ["| target | measured (each round) | met |", "| --- | --- | --- |"]
    for label, path, kind, limit in CPU_TARGETS:
        if path not in run.paths or "haproxy" not in run.paths:
            rows.append(f"| {label} | not measured in this run | - |")
            continue
        rs = [r for r in ratios(run, path, measure_of(run, kind)) if r is not None]
        met = "yes" if rs and max(rs) <= limit else "no"
        rows.append(f"| {label} | {ratio_text(rs)} | {met} |")
    added = [run.added_p99_ms(rnd, "encrypt") for rnd in run.rounds]
    added = [a for a in added if a is not None]
    if added:
        met = "yes" if max(added) <= 2.0 else "no"
        text = ", ".join(f"{a:+.2f} ms" for a in added)
        rows.append(f"| added Produce p99 at a moderate load with every value encrypted ≤ 2 ms | {text} | {met} |")
    else:
        rows.append("| added Produce p99 at a moderate load with every value encrypted ≤ 2 ms "
                    "| not measured in this run | - |")
    return rows


def moderate(run):
    """The moderate phase: each path's Produce latency at a fixed rate, beside direct's."""
    if not any(r["phase"] == "moderate" for r in run.rows):
        return []
    md = ["**a moderate load** (a fixed rate of 1 KB records, a share of what direct produced at full load in "
          "the same round; a few connections)", "",
          "| path | round | rate asked, records/s | produced, records/s | Produce p50 / p99 ms "
          "| added Produce p50 / p99 ms | proxy CPU ms per MB |",
          "| --- | --- | --- | --- | --- | --- | --- |"]
    for p in run.paths:
        for rnd in run.rounds:
            m = run.get(rnd, p, "few", "moderate")
            if m is None:
                continue
            x = m["load"]
            d = run.get(rnd, "direct", "few", "moderate")
            proxied = p != "direct"
            added = "-"
            if d is not None and proxied:
                dx = d["load"]
                added = (f"{(x.get('produce_p50_us', 0) - dx.get('produce_p50_us', 0)) / 1e3:+.2f} / "
                         f"{(x.get('produce_p99_us', 0) - dx.get('produce_p99_us', 0)) / 1e3:+.2f}")
            mbytes = Run.mbytes(m)
            cpu = f"{m['proxy_cpu_s'] / mbytes * 1e3:.2f}" if proxied and mbytes else "-"
            md.append(f"| {NAMES[p]} | {rnd} | {x.get('rate_records_per_s', 0)} | {x['produce_records_per_s']:.0f} | "
                      f"{x.get('produce_p50_us', 0) / 1e3:.2f} / {x.get('produce_p99_us', 0) / 1e3:.2f} | "
                      f"{added} | {cpu} |")
    md.append("")
    return md


def tables(run):
    md = []
    for conns in ["few"] + run.idle:
        label = ("a few connections (the load's own)" if conns == "few"
                 else f"{conns} idle connections held through the same path, plus the load's")
        md += [f"**{label}**", ""]
        md.append("| path | round | MB/s | vs direct | proxy CPU ms per MB | vs haproxy | proxy CPU µs per request "
                  "| Produce p50 / p99 ms | ping p50 / p99 µs | ping added p50 / p99 µs | proxy CPU µs per ping "
                  "| proxy RSS under load |")
        md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for p in run.paths:
            for rnd in run.rounds:
                tp, pg = run.get(rnd, p, conns, "throughput"), run.get(rnd, p, conns, "ping")
                if tp is None or pg is None:
                    continue
                d_tp, d_pg = run.get(rnd, "direct", conns, "throughput"), run.get(rnd, "direct", conns, "ping")
                x, y = tp["load"], pg["load"]
                proxied = p != "direct"
                cpu_mb = run.cpu_per_mb(rnd, p, conns)
                hap_mb = run.cpu_per_mb(rnd, "haproxy", conns)
                vs_hap = f"{cpu_mb / hap_mb:.2f}×" if proxied and cpu_mb is not None and hap_mb else "-"
                cpu_req = f"{tp['proxy_cpu_s'] / x['requests'] * 1e6:.0f}" if proxied and x.get("requests") else "-"
                cpu_ping = run.cpu_per_ping(rnd, p, conns)
                vs_direct = f"{100 * Run.mbps(tp) / Run.mbps(d_tp):.0f}%" if d_tp and Run.mbps(d_tp) else "-"
                dy = d_pg["load"] if d_pg else None
                added = f"{y['p50_us'] - dy['p50_us']:+d} / {y['p99_us'] - dy['p99_us']:+d}" if dy and proxied else "-"
                mb = f"{cpu_mb:.2f}" if proxied and cpu_mb is not None else "-"
                ping = f"{cpu_ping:.0f}" if proxied and cpu_ping is not None else "-"
                rss = f"{tp['rss_kib'] / 1024:.0f} MB" if proxied else "-"
                md.append(
                    f"| {NAMES[p]} | {rnd} | {Run.mbps(tp):.0f} | {vs_direct} | {mb} | {vs_hap} | {cpu_req} | "
                    f"{x.get('produce_p50_us', 0) / 1e3:.1f} / {x.get('produce_p99_us', 0) / 1e3:.1f} | "
                    f"{y['p50_us']} / {y['p99_us']} | {added} | {ping} | {rss} |")
        md.append("")
    md += ["**memory** (RSS of the proxy process before any connection, and with the idle connections)", "",
           "| path | round | RSS at start | RSS with idle connections | per idle connection |",
           "| --- | --- | --- | --- | --- |"]
    for p in run.paths:
        if p == "direct":
            continue
        for m in sorted((r for r in run.rows if r["path"] == p and r["phase"] == "memory"), key=lambda r: r["round"]):
            per = (m["rss_idle_kib"] - m["rss_before_kib"]) / m["idle"]
            md.append(f"| {NAMES[p]} | {m['round']} | {m['rss_before_kib'] / 1024:.1f} MB | "
                      f"{m['rss_idle_kib'] / 1024:.1f} MB | {per:.1f} KiB |")
    md.append("")
    return md


# Column headers for the profile's categories.
SHORT = {
    "kernel: socket send": "kernel: send (with loopback delivery)",
    "kernel: socket receive": "kernel: receive",
    "kernel: socket data copies": "kernel: send/receive copies",
    "kernel: epoll": "kernel: epoll",
    "kernel: futex, scheduling": "kernel: futex",
    "kernel: memory (faults, mmap)": "kernel: page faults, mmap",
    "kernel: syscall entry/exit, other syscalls": "kernel: syscall entry/exit, other calls",
    "kernel: other": "kernel: other",
    "tokio (runtime, I/O driver)": "tokio",
    "the proxy's own code": "own code (kwire, haproxy)",
}
UNIT = {"mb": ("throughput", "CPU per MB", "ms per MB", 2), "ping": ("ping", "CPU per small request", "µs per ping", 1)}


def profile_rows(run):
    """The profile phase's rows: ({(path, of): row}, {path: syscalls row}, round), or None."""
    prof = [r for r in run.rows if r["phase"] == "profile"]
    if not prof:
        return None
    rnd = max(r["round"] for r in prof)
    by = {(r["path"], r["of"]): r for r in prof if r["round"] == rnd}
    calls = {r["path"]: r for r in run.rows if r["phase"] == "syscalls" and r["round"] == rnd}
    return by, calls, rnd


def per_ping(row):
    return {k: v / row["pings"] for k, v in row["calls"].items()}


def explanations(run):
    """One line per missed CPU target: the categories that make its difference with haproxy."""
    misses = missed(run)
    if not misses:
        return []
    prof = profile_rows(run)
    md = ["Each missed target beside haproxy in the last round: the difference in CPU by category (each "
          "category's share of the proxy's samples in the profile pass, which ran after the measured rounds, "
          "times the CPU measured in that phase of the last round), in % of haproxy's CPU, largest first:", ""]
    for label, path, kind in misses:
        of, what, unit, digits = UNIT[kind]
        if prof is None:
            md.append(f"- {label}: no profile in this run (PROFILE=0, or perf could not record)")
            continue
        by, calls, rnd = prof
        a, h = measure_of(run, kind)(rnd, path, "few"), measure_of(run, kind)(rnd, "haproxy", "few")
        pa, ph = by.get((path, of)), by.get(("haproxy", of))
        if a is None or not h or pa is None or ph is None:
            md.append(f"- {label}: no profile of {NAMES[path]} and haproxy in round {rnd}")
            continue
        diffs = []
        for c in CATEGORIES:
            d = pa["categories"].get(c, 0) * a - ph["categories"].get(c, 0) * h
            diffs.append((100 * d / h, c))
        diffs.sort(key=lambda x: -abs(x[0]))
        big = [(pct, c) for pct, c in diffs if abs(pct) >= 1]
        shown = [f"{pct:+.0f}% {SHORT.get(c, c)}" for pct, c in big[:8]]
        rest = sum(pct for pct, _ in diffs) - sum(pct for pct, _ in big[:8])
        line = (f"- {NAMES[path]} − haproxy, {what}, round {rnd}: {a:.{digits}f} vs {h:.{digits}f} {unit} "
                f"({a / h:.2f}×, {100 * (a - h) / h:+.0f}%): " + ", ".join(shown or ["no category over 1%"])
                + f"; the rest {rest:+.0f}%")
        if kind == "ping" and path in calls and "haproxy" in calls:
            sa, sh = per_ping(calls[path]), per_ping(calls["haproxy"])
            d = sorted(((sa.get(k, 0) - sh.get(k, 0), k) for k in set(sa) | set(sh)), key=lambda x: -abs(x[0]))
            parts = [f"{v:+.2f} {k}" for v, k in d if abs(v) >= 0.05]
            line += (f"; system calls per ping {sum(sa.values()):.2f} vs {sum(sh.values()):.2f}"
                     + (": " + ", ".join(parts) if parts else ""))
        md.append(line)
    return md + [""]


def profiles(run):
    """Where each proxy's CPU goes: category shares, system calls per ping, top symbols."""
    prof = profile_rows(run)
    if prof is None:
        return []
    by, calls, rnd = prof
    paths = [p for p in run.paths if any(k[0] == p for k in by)]
    cats = [c for c in CATEGORIES if any(r["categories"].get(c, 0) >= 0.005 for r in by.values())]
    md = [f"**where the proxy's CPU goes** (`perf record` of the proxy process alone in the profile pass "
          f"after round {rnd}, outside the measured rounds, a few connections: a few seconds of a throughput "
          f"load and a whole ping load; the measured CPU is round {rnd}'s; each category's share "
          "of the samples, in %; kernel time by the system call it was in, send including the loopback's "
          "delivery to the receiver)", "",
          "| path | load | samples | measured CPU | " + " | ".join(SHORT.get(c, c) for c in cats) + " |",
          "| --- | --- | --- | --- | " + " | ".join("---" for _ in cats) + " |"]
    for p in paths:
        for of, kind in (("throughput", "mb"), ("ping", "ping")):
            r = by.get((p, of))
            if r is None:
                continue
            m = measure_of(run, kind)(rnd, p, "few")
            _, _, unit, digits = UNIT[kind]
            cpu = f"{m:.{digits}f} {unit}" if m is not None else "-"
            md.append(f"| {NAMES[p]} | {of} | {r['samples']} | {cpu} | "
                      + " | ".join(f"{100 * r['categories'].get(c, 0):.1f}" for c in cats) + " |")
    md.append("")
    if calls:
        rates = {p: per_ping(calls[p]) for p in paths if p in calls}
        names = sorted({k for v in rates.values() for k, x in v.items() if x >= 0.01},
                       key=lambda k: -max(v.get(k, 0) for v in rates.values()))
        md += [f"**system calls per ping** (`strace -c -f` of the proxy process over {next(iter(calls.values()))['pings']} "
               "more pings after the ping phase, round " + str(rnd) + ", not timed; both directions of one "
               "connection, each request and its response)", "",
               "| path | all | " + " | ".join(names) + " |",
               "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
        for p, v in rates.items():
            md.append(f"| {NAMES[p]} | {sum(v.values()):.2f} | " + " | ".join(f"{v.get(k, 0):.2f}" for k in names) + " |")
        md.append("")
    md += ["**the top symbols** (the share of the proxy's samples whose innermost function it is; "
           "`[k]` the kernel's)", ""]
    for p in paths:
        tops = [by.get((p, of), {}).get("top", []) for of in ("throughput", "ping")]
        md += [f"| {NAMES[p]}: throughput load | % | ping load | % |", "| --- | --- | --- | --- |"]
        for i in range(max(len(t) for t in tops)):
            cells = []
            for t in tops:
                cells += [f"`{t[i][0]}`", f"{100 * t[i][1]:.1f}"] if i < len(t) else ["", ""]
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
    return md


def section(run):
    md = ["<!-- proxy:begin -->",
          "<!-- Generated by benches/proxy_report.py from a run of benches/proxy.sh; edit the scripts, not this section. -->",
          "",
          f"{len(run.rounds)} round(s); paths in the order each round ran them: "
          + ", ".join(NAMES[p] for p in run.paths) + ".",
          "",
          "Targets (each round's ratio to haproxy in the same round, at a few connections; added "
          "latency against direct in the same round):",
          ""]
    md += targets(run) + [""] + explanations(run) + tables(run) + moderate(run) + profiles(run)
    md += ["<!-- proxy:end -->"]
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?", default=os.path.join(ROOT, "target", "bench-proxy", "results.jsonl"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--print", action="store_true", help="print the section instead of writing the doc")
    args = ap.parse_args()
    run = Run(load(args.results))
    if not run.rows:
        sys.exit(f"{args.results} holds no results")
    text = section(run)
    if args.print:
        print(text)
        return
    doc = open(args.doc).read()
    pattern = re.compile(r"<!-- proxy:begin -->.*?<!-- proxy:end -->", re.S)
    if not pattern.search(doc):
        sys.exit(f"{os.path.relpath(args.doc, ROOT)} has no <!-- proxy:begin --> ... <!-- proxy:end --> markers")
    open(args.doc, "w").write(pattern.sub(lambda _: text, doc))
    print(f"wrote the proxy section of {os.path.relpath(args.doc, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()

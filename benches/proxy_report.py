#!/usr/bin/env python3
"""Writes the proxy section of docs/benchmarks.md from a run of benches/proxy.sh.

Reads target/bench-proxy/results.jsonl (one JSON object per phase, written by proxy.sh) and
replaces what lies between `<!-- proxy:begin -->` and `<!-- proxy:end -->` in
docs/benchmarks.md: the per-path tables, the memory table and the targets, each figure from
this run. The run's conditions (commit, load average) go to stderr, never into the doc.

    python3 benches/proxy_report.py [RESULTS] [--doc docs/benchmarks.md] [--print]
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


def targets(run):
    rows = ["| target | measured (each round) | met |", "| --- | --- | --- |"]

    def line(label, path, measure, limit):
        if path not in run.paths or "haproxy" not in run.paths:
            rows.append(f"| {label} | not measured in this run | - |")
            return
        rs = [r for r in ratios(run, path, measure) if r is not None]
        met = "yes" if rs and max(rs) <= limit else "no"
        rows.append(f"| {label} | {ratio_text(rs)} | {met} |")

    line("CPU per MB with tenants ≤ 1.1× haproxy", "tenant", run.cpu_per_mb, 1.1)
    line("CPU per small request with `kwire proxy --quiet` ≤ 1.5× haproxy", "quiet", run.cpu_per_ping, 1.5)
    line("CPU per small request, the library with no filter and no log ≤ 1.2× haproxy",
         "library", run.cpu_per_ping, 1.2)
    line("CPU per MB with every value encrypted ≤ 2× haproxy", "encrypt", run.cpu_per_mb, 2.0)
    return rows


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


def section(run):
    md = ["<!-- proxy:begin -->",
          "<!-- Generated by benches/proxy_report.py from a run of benches/proxy.sh; edit the scripts, not this section. -->",
          "",
          f"{len(run.rounds)} round(s); paths in the order each round ran them: "
          + ", ".join(NAMES[p] for p in run.paths) + ".",
          "",
          "Targets (each round's ratio to haproxy in the same round, at a few connections):",
          ""]
    md += targets(run) + [""] + tables(run) + ["<!-- proxy:end -->"]
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

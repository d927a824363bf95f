#!/usr/bin/env python3
"""Turns benchmark output into docs/benchmarks.md tables and docs/bench-chart.svg.

Reads criterion's results (target/criterion/<frame>/<bench>/new/{estimates,benchmark}.json,
written by `cargo bench --bench codec` and `--bench records`, for the krabka_* ids by the
krabka-protocol bench crate in benches/krabka/, and for the odradek_*, nisshi_* and
kwire_frame_view_walk ids and the records/*/odradek and nisshi readers by benches/peers/)
and, when present, gungraun's summaries
(target/gungraun/**/summary.json, written by `cargo bench --bench instructions` with
GUNGRAUN_SAVE_SUMMARY=json). Times are criterion's median estimate per iteration.

The generated markdown replaces what lies between the `<!-- report:begin -->` and
`<!-- report:end -->` markers of docs/benchmarks.md; the prose around them is kept.

With `--fetch-path` it fills only the broker path section of docs/records.md (between
`<!-- fetch-path:begin -->` and `<!-- fetch-path:end -->`), from `cargo bench --bench
fetch_path` and `fetch_path_instructions` and the sizes that bench writes to
target/fetch-path.json; a full run fills it too when those results are there.

Standard library only. Usage: python3 benches/report.py [--meta target/bench-meta.json] [--fetch-path]
"""

import argparse
import glob
import json
import math
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# The frames, in the order of benches/support/mod.rs: seed frames, then realistic ones.
SEED = [
    "apiversions_v4_request",
    "apiversions_v4_response",
    "listgroups_v5_request",
    "listgroups_v5_response",
    "listoffsets_v10_request",
    "listoffsets_v10_response",
]
REALISTIC = [
    "apiversions_v4_response_90keys",
    "listgroups_v2_response_1000",
    "listgroups_v5_response_1000",
    "listoffsets_v5_request_10x100",
    "listoffsets_v10_request_10x100",
    "listoffsets_v10_response_10x100",
]

# (criterion bench id, gungraun function, label, kafka-protocol counterpart, krabka-protocol
# counterpart, odradek-protocol counterpart, nisshi-sans-io counterpart). nisshi decodes and
# encodes whole frames only, so its counterparts are kwire's whole-frame operations.
OPS = [
    ("copy", None, "copy (floor)", None, None, None, None),
    ("kwire_view", "view", "kwire view", "kp_decode", "krabka_view_walk", "odradek_decode", None),
    ("kwire_view_walk", "view_walk", "kwire view + walk", "kp_decode", "krabka_view_walk", "odradek_decode", None),
    ("kwire_frame_view_walk", None, "kwire whole frame: header + view + walk", None, None, None, "nisshi_decode_frame"),
    ("kwire_decode_ref", "decode_ref", "kwire reference decode", "kp_decode", "krabka_decode", "odradek_decode", None),
    ("kwire_encoded_len", "encoded_len", "kwire encoded_len", "kp_compute_size", None, None, None),
    ("kwire_encode", "encode", "kwire encode", "kp_encode", "krabka_encode", "odradek_encode", None),
    ("kwire_encode_frame", "encode_frame", "kwire encode whole frame", None, None, None, "nisshi_encode_frame"),
    ("kp_decode", None, "kafka-protocol decode", None, None, None, None),
    ("kp_encode", None, "kafka-protocol encode", None, None, None, None),
    ("kp_compute_size", None, "kafka-protocol compute_size", None, None, None, None),
    ("krabka_decode", None, "krabka-protocol owned decode", None, None, None, None),
    ("krabka_view_walk", None, "krabka-protocol borrowed decode + walk", None, None, None, None),
    ("krabka_encode", None, "krabka-protocol encode", None, None, None, None),
    ("odradek_decode", None, "odradek-protocol decode (owned, from `Bytes`)", None, None, None, None),
    ("odradek_encode", None, "odradek-protocol encode", None, None, None, None),
    ("nisshi_decode_frame", None, "nisshi-sans-io decode of the whole frame (owned, serde)", None, None, None, None),
    ("nisshi_encode_frame", None, "nisshi-sans-io encode of the whole frame (into a new `Bytes`)", None, None, None, None),
]

# The krabka-protocol bench crate (benches/krabka/) and its pinned toolchain.
KRABKA_DIR = os.path.join(ROOT, "benches", "krabka")


def krabka_toolchain():
    """The channel pinned by benches/krabka/rust-toolchain.toml, or None."""
    try:
        with open(os.path.join(KRABKA_DIR, "rust-toolchain.toml")) as f:
            m = re.search(r'^channel\s*=\s*"([^"]+)"', f.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def has_krabka(crit):
    return any(bench.startswith("krabka_") for _, bench in crit)


def load_criterion(root):
    """{(group, function_id): {"ns": median ns, "bytes": throughput or None, "value": param}}"""
    out = {}
    for path in glob.glob(os.path.join(root, "target", "criterion", "**", "new", "benchmark.json"), recursive=True):
        with open(path) as f:
            bench = json.load(f)
        with open(os.path.join(os.path.dirname(path), "estimates.json")) as f:
            est = json.load(f)
        throughput = bench.get("throughput") or {}
        key = (bench["group_id"], bench["function_id"] if bench.get("value_str") is None
               else f'{bench["function_id"]}/{bench["value_str"]}')
        out[key] = {
            "ns": est["median"]["point_estimate"],
            "lo": est["median"]["confidence_interval"]["lower_bound"],
            "hi": est["median"]["confidence_interval"]["upper_bound"],
            "bytes": throughput.get("Bytes") or throughput.get("BytesDecimal"),
        }
    return out


def load_gungraun(root):
    """{(function, id): instructions}"""
    out = {}
    for path in glob.glob(os.path.join(root, "target", "gungraun", "**", "summary.json"), recursive=True):
        with open(path) as f:
            s = json.load(f)
        try:
            metrics = s["profiles"][0]["data"]["parts"][0]["metrics"]
            ir = metrics["Ir"]["values"]["new"]
        except (KeyError, IndexError, TypeError):
            continue
        out[(s["function_name"], s["id"])] = ir
    return out


# Realistic frames made of many like elements: (frame, what one element is, how many).
PER_ELEMENT = [
    ("apiversions_v4_response_90keys", "ApiVersions key", 90),
    ("listgroups_v2_response_1000", "ListGroups v2 group", 1000),
    ("listgroups_v5_response_1000", "ListGroups v5 group", 1000),
    ("listoffsets_v5_request_10x100", "ListOffsets v5 request partition", 1000),
    ("listoffsets_v10_request_10x100", "ListOffsets v10 request partition", 1000),
    ("listoffsets_v10_response_10x100", "ListOffsets v10 response partition", 1000),
]


def per_element_table(gg):
    """Instructions per element (callgrind via gungraun): the whole frame's count divided
    by its element count, so the frame's own fixed cost (a few hundred instructions) is
    spread over the elements too."""
    ops = [("view", "view"), ("view_walk", "view + walk"), ("encoded_len", "encoded_len"),
           ("encode", "encode"), ("decode_ref", "reference decode")]
    rows = [
        "Instructions per element: the frame's count ÷ its element count (the frame's own",
        "fixed cost, a few hundred instructions, is spread over the elements).",
        "",
        "| element | " + " | ".join(label for _, label in ops) + " |",
        "|---|" + "---:|" * len(ops),
    ]
    for frame, element, n in PER_ELEMENT:
        cells = []
        for func, _ in ops:
            ir = gg.get((func, frame))
            cells.append(f"{ir / n:,.1f}" if ir is not None else "–")
        rows.append(f"| {element} (`{frame}`, {n:,}) | " + " | ".join(cells) + " |")
    floors = sorted({ir for (func, _), ir in gg.items() if func == "floor"})
    if floors:
        shown = f"{floors[0]:,}" if len(floors) == 1 else f"{floors[0]:,}-{floors[-1]:,}"
        rows += ["", f"Every instruction count here and in the frame tables includes the harness's own {shown} "
                 "(`floor`: the bench that only hands the boxed frame back)."]
    return rows + [""]


def machine(meta, crit):
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        rustc = version_only(subprocess.run(["rustc", "-V"], capture_output=True, text=True,
                                            check=True).stdout)
    except (OSError, subprocess.CalledProcessError):
        rustc = "unknown"
    rows = [
        ("CPU model (/proc/cpuinfo)", model),
        ("cores (nproc)", str(os.cpu_count())),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("compiler", rustc),
    ]
    channel = krabka_toolchain()
    if channel and has_krabka(crit):
        try:
            krustc = version_only(subprocess.run(["rustc", f"+{channel}", "-V"], capture_output=True,
                                                 text=True, check=True).stdout)
        except (OSError, subprocess.CalledProcessError):
            krustc = f"{channel} (rust-toolchain.toml)"
        rows.append(("compiler (krabka-protocol bench, benches/krabka)", krustc))
    elif meta.get("krabka"):
        rows.append(("krabka-protocol bench (benches/krabka)", meta["krabka"]))
    if meta.get("peers"):
        rows.append(("odradek-protocol and nisshi-sans-io bench (benches/peers)", version_only(meta["peers"])))
    if meta.get("command"):
        rows.append(("command", f"`{meta['command']}`"))
    return rows


def version_only(text):
    """`rustc 1.95.0 (59807616e 2026-04-14)` without its commit and date: the docs keep no
    commit ids or dates (the run's time and load are in target/bench-meta.json and printed
    at the end of the run)."""
    return re.sub(r" \([0-9a-f]{7,} \d{4}-\d{2}-\d{2}\)", "", text.strip())


def fmt_ns(ns):
    if ns is None:
        return "–"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.1f} ns"


def fmt_ratio(r):
    if r is None:
        return "–"
    return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"


def fmt_int(n):
    return "–" if n is None else f"{n:,}"


def frame_table(name, crit, gg):
    lines = [
        f"#### `{name}`",
        "",
        "| operation | time (median) | GB/s | kafka-protocol time ÷ this | krabka-protocol time ÷ this | "
        "odradek-protocol time ÷ this | nisshi-sans-io time ÷ this | this ÷ copy | instructions |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    copy = crit.get((name, "copy"), {}).get("ns")
    for bench, gfn, label, peer, kpeer, opeer, npeer in OPS:
        r = crit.get((name, bench))
        if r is None:
            continue
        ns = r["ns"]
        gbs = f'{r["bytes"] / ns:.2f}' if r.get("bytes") else "–"
        vs_peer = None
        if peer and (name, peer) in crit:
            vs_peer = crit[(name, peer)]["ns"] / ns
        vs_krabka = crit[(name, kpeer)]["ns"] / ns if kpeer and (name, kpeer) in crit else None
        vs_odradek = crit[(name, opeer)]["ns"] / ns if opeer and (name, opeer) in crit else None
        vs_nisshi = crit[(name, npeer)]["ns"] / ns if npeer and (name, npeer) in crit else None
        vs_copy = ns / copy if copy and bench != "copy" else None
        ir = gg.get((gfn, name)) if gfn else None
        lines.append(f"| {label} | {fmt_ns(ns)} | {gbs} | {fmt_ratio(vs_peer)} | {fmt_ratio(vs_krabka)} | "
                     f"{fmt_ratio(vs_odradek)} | {fmt_ratio(vs_nisshi)} | {fmt_ratio(vs_copy)} | {fmt_int(ir)} |")
    lines.append("")
    return lines


def ratio(crit, name, a, b):
    """time of b / time of a (how many times faster a is than b)."""
    if (name, a) in crit and (name, b) in crit:
        return crit[(name, b)]["ns"] / crit[(name, a)]["ns"]
    return None


def targets(crit, gg, meta):
    rows = []

    def check(label, values, ok, missing=None):
        if missing and all(v is None for _, v in values):
            rows.append(f"| {label} | {missing} | not run |")
            return
        shown = ", ".join(f"{n.split('_response')[0].split('_request')[0]}{'_req' if 'request' in n else '_resp'}: {fmt_ratio(v)}"
                          for n, v in values if v is not None)
        met = all(v is not None and ok(v) for _, v in values) and values
        rows.append(f"| {label} | {shown} | {'met' if met else 'missed'} |")

    no_krabka = None if has_krabka(crit) else (
        f"no krabka-protocol results (benches/krabka {meta.get('krabka') or 'not run'}; see benches/run.sh)")
    no_peers = None if any(b.startswith("odradek_") for _, b in crit) else (
        f"no odradek-protocol results (benches/peers {meta.get('peers') or 'not run'}; see benches/run.sh)")

    # Small frames.
    seed_kp = [(n, ratio(crit, n, "kwire_view_walk", "kp_decode")) for n in SEED]
    check("view + walk ≥4× faster than kafka-protocol decode (every seed frame)", seed_kp, lambda v: v >= 4)
    seed_krabka = [(n, ratio(crit, n, "kwire_view_walk", "krabka_view_walk")) for n in SEED]
    check("view + walk ≥3× faster than krabka-protocol borrowed decode + the same walk (every seed frame)",
          seed_krabka, lambda v: v >= 3, no_krabka)
    # Realistic frames.
    walk_vs_kp = [(n, ratio(crit, n, "kwire_view_walk", "kp_decode")) for n in REALISTIC]
    check("view + walk ≥10× faster than kafka-protocol decode (every realistic frame)", walk_vs_kp, lambda v: v >= 10)
    lg = [(n, v) for n, v in walk_vs_kp if n.startswith("listgroups")]
    check("view + walk ≥20× faster than kafka-protocol decode (ListGroups)", lg, lambda v: v >= 20)
    walk_vs_krabka = [(n, ratio(crit, n, "kwire_view_walk", "krabka_view_walk")) for n in REALISTIC]
    check("view + walk ≥3× faster than krabka-protocol borrowed decode + the same walk (every realistic frame)",
          walk_vs_krabka, lambda v: v >= 3, no_krabka)
    lo_copy = [(n, ratio(crit, n, "copy", "kwire_view_walk")) for n in REALISTIC if n.startswith("listoffsets_v10_request")]
    check("view + walk within 8× of copying the bytes (ListOffsets v10 request; shown: walk ÷ copy)", lo_copy, lambda v: v <= 8)
    # Encoders.
    enc = [(n, ratio(crit, n, "kwire_encode", "kp_encode")) for n in REALISTIC + SEED]
    check("encode faster than kafka-protocol encode (every frame)", enc, lambda v: v > 1)
    check("encode ≥2× faster than kafka-protocol encode (every realistic frame)", enc[:len(REALISTIC)], lambda v: v >= 2)
    enc_krabka = [(n, ratio(crit, n, "kwire_encode", "krabka_encode")) for n in REALISTIC + SEED]
    check("encode faster than krabka-protocol encode (every frame)", enc_krabka, lambda v: v > 1, no_krabka)
    enc_odradek = [(n, ratio(crit, n, "kwire_encode", "odradek_encode")) for n in REALISTIC + SEED]
    check("encode faster than odradek-protocol encode (every frame)", enc_odradek, lambda v: v > 1, no_peers)

    # Instruction targets (callgrind through gungraun), less the harness's own count.
    def instr(label, func, frame, per, limit):
        ir, floor = gg.get((func, frame)), gg.get(("floor", frame))
        if ir is None or floor is None:
            rows.append(f"| {label} | no gungraun results | not run |")
            return
        value = (ir - floor) / per
        rows.append(f"| {label} | {value:,.1f} (`{func}` {ir:,} − `floor` {floor:,}{f', ÷ {per:,}' if per > 1 else ''}) | "
                    f"{'met' if value <= limit else 'missed'} |")

    instr("`RequestBodyView::new` on the ApiVersions v4 request: ≤60 instructions", "view", "apiversions_v4_request", 1, 60)
    instr("view + walk of a ListOffsets v10 request partition: ≤25 instructions", "view_walk",
          "listoffsets_v10_request_10x100", 1000, 25)
    instr("view + walk of a ListGroups v5 group: ≤150 instructions", "view_walk", "listgroups_v5_response_1000", 1000, 150)

    scaling = [(p, crit.get(("encoded_len_v5_scaling", f"kwire_encoded_len/{p}"), {}).get("ns"))
               for p in ("10x10", "10x100", "10x1000")]
    irs = [gg.get(("encoded_len_v5", f"p{p}")) for p, _ in scaling]
    if all(ns for _, ns in scaling):
        spread = max(ns for _, ns in scaling) / min(ns for _, ns in scaling)
        flat_ir = all(irs) and len(set(irs)) == 1
        shown = ", ".join(f"{p}: {fmt_ns(ns)}" for p, ns in scaling)
        if all(irs):
            shown += f"; instructions {', '.join(fmt_int(i) for i in irs)}"
        met = flat_ir or (not all(irs) and spread < 1.5)
        rows.append(f"| encoded_len of ListOffsets v5 independent of partition count | {shown} | {'met' if met else 'missed'} |")
    # A tenant's renaming (benches/tenant.rs): the whole chain on a 20 × 10 Fetch request.
    chain = crit.get(("tenant_fetch_20x10", "tenant_chain"))
    if chain is None:
        rows.append("| a 20 × 10 Fetch request renamed for a tenant by the filter chain: ≤10 µs (≤50 ns a partition) "
                    "| no `benches/tenant.rs` results | not run |")
    else:
        rows.append(f"| a 20 × 10 Fetch request renamed for a tenant by the filter chain: ≤10 µs (≤50 ns a partition) "
                    f"| {fmt_ns(chain['ns'])} ({chain['ns'] / 200:.0f} ns a partition) "
                    f"| {'met' if chain['ns'] <= 10_000 else 'missed'} |")
    alloc = meta.get("alloc_test")
    verdict = {"passed": "met", "failed": "missed"}.get(alloc, "not run")
    rows.append("| zero allocations on every kwire view, walk, sizing and encoding path | "
                f"`tests/alloc.rs` {alloc or 'not run by this report'} | {verdict} |")
    return ["| target | measured | |", "|---|---|---|"] + rows + [""]


def tenant_table(crit):
    """benches/tenant.rs: a 20 × 10 Fetch request v12 renamed for a tenant, three ways."""
    what = [("splice", "`filter::splice_request`: the prefix spliced onto every topic name"),
            ("tenant_chain", "a `FilterChain` with a `Tenant` (the whole filter path; it splices)"),
            ("value_tree", "decode into `reflect` values, rename, encode (the path splicing replaced)")]
    rows = ["| path | time per request | per partition |", "|---|---:|---:|"]
    found = False
    for bench, label in what:
        r = crit.get(("tenant_fetch_20x10", bench))
        if r:
            found = True
            rows.append(f"| {label} | {fmt_ns(r['ns'])} | {fmt_ns(r['ns'] / 200)} |")
    if not found:
        return ["(No `benches/tenant.rs` results in this run.)", ""]
    return rows + [""]


def scaling_table(crit, gg):
    lines = [
        "| ListOffsets v5 request | kwire encoded_len | instructions | kafka-protocol compute_size |",
        "|---|---:|---:|---:|",
    ]
    for p in ("10x10", "10x100", "10x1000"):
        k = crit.get(("encoded_len_v5_scaling", f"kwire_encoded_len/{p}"), {}).get("ns")
        c = crit.get(("encoded_len_v5_scaling", f"kp_compute_size/{p}"), {}).get("ns")
        lines.append(f"| 10 topics × {p.split('x')[1]} partitions | {fmt_ns(k)} | {fmt_int(gg.get(('encoded_len_v5', 'p' + p)))} | {fmt_ns(c)} |")
    lines.append("")
    return lines


def summary_table(crit):
    lines = [
        "| frame | body bytes | copy | kwire view + walk | kafka-protocol decode | speed-up | "
        "krabka-protocol borrowed decode + walk | speed-up | kwire encode | kafka-protocol encode | speed-up | "
        "krabka-protocol encode | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in SEED + REALISTIC:
        sizes = [r["bytes"] for (group, _), r in crit.items() if group == name and r.get("bytes")]
        if not sizes:
            continue
        # Every bench of a frame has the body as its throughput (whole-frame encoding aside).
        b = crit.get((name, "copy"), {}).get("bytes") or min(sizes)
        g = lambda k: crit.get((name, k), {}).get("ns")  # noqa: E731
        lines.append(
            f"| `{name}` | {b:,} | {fmt_ns(g('copy'))} | {fmt_ns(g('kwire_view_walk'))} | {fmt_ns(g('kp_decode'))} | "
            f"{fmt_ratio(ratio(crit, name, 'kwire_view_walk', 'kp_decode'))} | {fmt_ns(g('krabka_view_walk'))} | "
            f"{fmt_ratio(ratio(crit, name, 'kwire_view_walk', 'krabka_view_walk'))} | {fmt_ns(g('kwire_encode'))} | "
            f"{fmt_ns(g('kp_encode'))} | {fmt_ratio(ratio(crit, name, 'kwire_encode', 'kp_encode'))} | "
            f"{fmt_ns(g('krabka_encode'))} | {fmt_ratio(ratio(crit, name, 'kwire_encode', 'krabka_encode'))} |"
        )
    lines += ["", "Each speed-up is the peer's time ÷ kwire's time for the same frame (above 1: kwire is faster).", ""]
    return lines


def peers_summary_table(crit):
    """odradek-protocol and nisshi-sans-io beside kwire (benches/peers/). nisshi works on whole
    frames only, so it is set against kwire's whole-frame operations."""
    lines = [
        "| frame | kwire view + walk | odradek-protocol decode | speed-up | kwire whole frame: header + view + walk | "
        "nisshi-sans-io decode of the frame | speed-up | kwire encode | odradek-protocol encode | speed-up | "
        "kwire encode whole frame | nisshi-sans-io encode of the frame | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    any_row = False
    for name in SEED + REALISTIC:
        g = lambda k: crit.get((name, k), {}).get("ns")  # noqa: E731
        if not any(g(k) for k in ("odradek_decode", "nisshi_decode_frame")):
            continue
        any_row = True
        lines.append(
            f"| `{name}` | {fmt_ns(g('kwire_view_walk'))} | {fmt_ns(g('odradek_decode'))} | "
            f"{fmt_ratio(ratio(crit, name, 'kwire_view_walk', 'odradek_decode'))} | {fmt_ns(g('kwire_frame_view_walk'))} | "
            f"{fmt_ns(g('nisshi_decode_frame'))} | {fmt_ratio(ratio(crit, name, 'kwire_frame_view_walk', 'nisshi_decode_frame'))} | "
            f"{fmt_ns(g('kwire_encode'))} | {fmt_ns(g('odradek_encode'))} | "
            f"{fmt_ratio(ratio(crit, name, 'kwire_encode', 'odradek_encode'))} | {fmt_ns(g('kwire_encode_frame'))} | "
            f"{fmt_ns(g('nisshi_encode_frame'))} | {fmt_ratio(ratio(crit, name, 'kwire_encode_frame', 'nisshi_encode_frame'))} |"
        )
    if not any_row:
        return ["(No odradek-protocol or nisshi-sans-io results: benches/peers was not run.)", ""]
    lines += [
        "",
        "Each speed-up is the peer's time ÷ kwire's time (above 1: kwire is faster). A frame without a",
        "nisshi-sans-io figure is one it decodes wrongly: its schemas stop at ListOffsets v9, and it reads",
        "v10 requests as v9 ones, without their TimeoutMs (benches/peers/ checks every decode).",
        "",
    ]
    return lines


# benches/records.rs and benches/peers/benches/peers_records.rs: (group, [(id, label)]).
RECORDS = [
    ("records/uncompressed", "uncompressed"),
    ("records/lz4", "lz4"),
    ("records/zstd", "zstd"),
]
RECORD_READERS = [
    ("kwire", "kwire (`RecordBatches`, `records_in`, CRC-32C checked)"),
    ("kwire_no_crc", "kwire without the CRC (`records_unverified`)"),
    ("kafka-protocol", "kafka-protocol 0.18 (`RecordBatchDecoder::decode_all`)"),
    ("odradek", "odradek-protocol 0.1 (`records::decode_set`, hardware CRC-32C)"),
    ("nisshi", "nisshi-sans-io 0.8 (`deflated::Batch` then `inflated::Batch`)"),
    ("decompress_only", "the decompressor alone (floor)"),
    ("copy", "copy of the bytes (floor)"),
]


def records_table(crit):
    """Every record of 10 batches of 1,000 read (key, value, headers), per codec."""
    groups = [(g, label) for g, label in RECORDS if any(group == g for group, _ in crit)]
    if not groups:
        return ["(No record batch results: `cargo bench --bench records` was not run.)", ""]
    lines = [
        "| reader | " + " | ".join(f"{label}: time | GB/s | ÷ kwire" for _, label in groups) + " |",
        "|---|" + "---:|---:|---:|" * len(groups),
    ]
    for rid, label in RECORD_READERS:
        cells, seen = [], False
        for g, _ in groups:
            r = crit.get((g, rid))
            base = crit.get((g, "kwire"), {}).get("ns")
            if r is None:
                cells += ["–", "–", "–"]
                continue
            seen = True
            gbs = f'{r["bytes"] / r["ns"]:.2f}' if r.get("bytes") else "–"
            cells += [fmt_ns(r["ns"]), gbs, fmt_ratio(r["ns"] / base) if base else "–"]
        if seen:
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Throughput is the uncompressed size of the batches (about 1.2 MB). \"÷ kwire\" is the reader's",
        "time ÷ kwire's (above 1: kwire is faster). odradek-protocol keeps compressed batches as raw",
        "bytes (no codecs), so it has no lz4 or zstd figure.",
        "",
    ]
    return lines


# benches/encrypt.rs: (criterion id, label), the floor first.
ENCRYPT = [
    ("aes_256_gcm_seal", "AES-256-GCM alone (ring), seal in place"),
    ("aes_256_gcm_open", "AES-256-GCM alone (ring), open (a copy of each)"),
    ("filter_encrypt", "kwire encryption filter, Produce side (`encrypt_records`)"),
    ("filter_decrypt", "kwire encryption filter, Fetch side (`decrypt_records`)"),
]


def encrypt_table(crit):
    """The encryption filter alone on one core beside AES-256-GCM on the same values."""
    if not any(group == "encrypt" for group, _ in crit):
        return ["(No record encryption results: `cargo bench --bench encrypt` was not run.)", ""]
    lines = [
        "| operation | time per batch | MB/s of values | ÷ AES-256-GCM alone |",
        "|---|---:|---:|---:|",
    ]
    floors = {"seal": crit.get(("encrypt", "aes_256_gcm_seal"), {}).get("ns"),
              "open": crit.get(("encrypt", "aes_256_gcm_open"), {}).get("ns")}
    for rid, label in ENCRYPT:
        r = crit.get(("encrypt", rid))
        if r is None:
            continue
        mbs = f'{r["bytes"] / r["ns"] * 1e3:,.0f}' if r.get("bytes") else "–"
        floor = floors["open" if rid.endswith(("open", "decrypt")) else "seal"]
        lines.append(f"| {label} | {fmt_ns(r['ns'])} | {mbs} | {fmt_ratio(r['ns'] / floor) if floor else '–'} |")
    lines += [
        "",
        "One batch of 1,000 records with 1 KiB values that do not compress, uncompressed, on one core",
        "(a current-thread runtime; the memory KMS, its data key cached as in a running proxy). MB/s",
        "counts the values' bytes (1,024,000) in every row. \"÷ AES-256-GCM alone\" is the row's time ÷",
        "sealing (or opening) the same values with ring and nothing else: what the envelopes, the",
        "records and batches written again and the CRC add to the cipher.",
        "",
    ]
    return lines


def readme_block(crit, meta):
    """The README's short form: the chart and the speed-ups on the realistic frames."""
    lines = [
        "![time per operation on the realistic frames](docs/bench-chart.svg)",
        "",
        "| realistic frame | view + walk vs kafka-protocol decode | vs krabka-protocol borrowed decode + walk "
        "| encode vs kafka-protocol | vs krabka-protocol |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in REALISTIC:
        if not any(group == name for group, _ in crit):
            continue
        cells = [
            fmt_ratio(ratio(crit, name, "kwire_view_walk", "kp_decode")),
            fmt_ratio(ratio(crit, name, "kwire_view_walk", "krabka_view_walk")),
            fmt_ratio(ratio(crit, name, "kwire_encode", "kp_encode")),
            fmt_ratio(ratio(crit, name, "kwire_encode", "krabka_encode")),
        ]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Times per frame on one shared 2-core machine (`bash benches/run.sh`); each figure",
        "is the peer's time ÷ kwire's (above 1: kwire is faster). `docs/benchmarks.md` has every",
        "operation, instruction counts and what the misses of the targets come from.",
    ]
    return lines


def tick(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1)):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chart(crit, path):
    """Horizontal bars of time per operation (log scale), one block per realistic frame."""
    series = [
        ("copy", "copy (floor)", "#9e9e9e"),
        ("kwire_view_walk", "kwire view + walk", "#1f77b4"),
        ("kp_decode", "kafka-protocol decode", "#ff7f0e"),
        ("krabka_view_walk", "krabka-protocol borrowed decode + walk", "#9467bd"),
        ("odradek_decode", "odradek-protocol decode", "#bcbd22"),
        ("nisshi_decode_frame", "nisshi-sans-io decode (whole frame)", "#17becf"),
        ("kwire_encode", "kwire encode", "#2ca02c"),
        ("kp_encode", "kafka-protocol encode", "#d62728"),
        ("krabka_encode", "krabka-protocol encode", "#8c564b"),
        ("odradek_encode", "odradek-protocol encode", "#e377c2"),
        ("nisshi_encode_frame", "nisshi-sans-io encode (whole frame)", "#7f7f7f"),
    ]
    # Without krabka-protocol results (its bench was skipped), no empty krabka bars.
    series = [s for s in series if any((n, s[0]) in crit for n in REALISTIC)]
    frames = [n for n in REALISTIC if (n, "copy") in crit or (n, "krabka_view_walk") in crit]
    if not frames:
        return False
    values = [crit[(n, s)]["ns"] for n in frames for s, _, _ in series if (n, s) in crit]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    width = 900
    # The legend, wrapped into as many rows as it needs.
    legend, lx, ly = [], 60, 32
    for _, label, color in series:
        w = 14 + 6 * len(label) + 24
        if lx + w > width - 20 and lx > 60:
            lx, ly = 60, ly + 16
        legend.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{color}"/>')
        legend.append(f'<text x="{lx + 14}" y="{ly + 9}">{esc(label)}</text>')
        lx += w
    left, right, top, bar, gap = 250, 90, ly + 28, 13, 16
    plot_w = width - left - right
    rows = len(frames) * len(series)
    height = top + rows * bar + len(frames) * gap + 50

    def x(ns):
        return left + plot_w * (math.log10(ns) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">'
        "Time per operation on the realistic frames (median, log scale; shorter is faster)</text>",
    ]
    out += legend
    # grid
    plot_bottom = height - 40
    decade = lo
    while decade <= hi * 1.0001:
        gx = x(decade)
        out.append(f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{plot_bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{gx:.1f}" y="{plot_bottom + 14}" text-anchor="middle">{esc(tick(decade))}</text>')
        decade *= 10
    y = top
    for name in frames:
        out.append(f'<text x="{left - 8}" y="{y + bar * len(series) / 2 + 4:.1f}" text-anchor="end" '
                   f'font-weight="bold">{esc(name)}</text>')
        for key, _, color in series:
            r = crit.get((name, key))
            if r:
                w = max(x(r["ns"]) - left, 1)
                out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 2}" fill="{color}"/>')
                out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar - 4}">{esc(fmt_ns(r["ns"]))}</text>')
            y += bar
        y += gap
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return True


# benches/fetch_path.rs: (criterion id, gungraun function, label).
FETCH_PATH = [
    ("kwire_validate_vectored_fetch", "kwire_validate_vectored_fetch",
     "kwire: `validate_and_assign` in place + `vectored::encode_response` into `IoSlice`s"),
    ("kafka_protocol_decode_encode", "kafka_protocol_decode_encode",
     "kafka-protocol 0.18: decode the request and its records, assign, encode the batches and the Fetch response"),
    ("kwire_validate_only", "kwire_validate_only", "… of which `validate_and_assign` of the 8 batches (with parsing the request)"),
    ("kwire_vectored_fetch_only", "kwire_vectored_fetch_only", "… of which the vectored Fetch response encode"),
    ("copy", "copy_floor", "copy of the batches into one buffer (floor)"),
    ("crc32c", "crc32c", "CRC-32C of the batches (`records::crc::crc32c`)"),
]


def fetch_path_section(crit, gg, meta, facts):
    """The "Broker path" section of docs/records.md, from `cargo bench --bench fetch_path`
    (and `fetch_path_instructions`), with the sizes the bench measured (target/fetch-path.json)."""
    records = facts["records"]
    batch = facts["batch_bytes"]
    # Bytes written into new buffers, and record-batch bytes among them, per operation.
    written = {
        "kwire_validate_vectored_fetch": (facts["kwire_buf_bytes"], facts["kwire_record_bytes_copied"]),
        "kwire_validate_only": (0, 0),
        "kwire_vectored_fetch_only": (facts["kwire_buf_bytes"], facts["kwire_record_bytes_copied"]),
        "kafka_protocol_decode_encode": (facts["kp_batch_bytes_encoded"] + facts["kp_response_bytes"],
                                         facts["kp_batch_bytes_encoded"] + batch),
        "copy": (batch, batch),
        "crc32c": (0, 0),
    }
    rows = [
        "<!-- fetch-path:begin -->",
        "<!-- Generated by benches/report.py --fetch-path; edit the script, not this section. -->",
        "",
        f"One Produce request of {facts['request_bytes']:,} bytes: {facts['partitions']} partitions, each one batch of "
        f"{records // facts['partitions']:,} records ({batch:,} bytes of batches, {records:,} records), validated with its "
        f"offsets assigned and fetched back as one Fetch v17 response frame of {facts['response_bytes']:,} bytes "
        f"({facts['kwire_parts']} parts for `writev`). Times are criterion's median per request "
        "(95% interval of the median in brackets); instructions are callgrind's, through gungraun.",
        "",
        "| operation | time | per record | vs kwire | instructions | per record | bytes written per record | of which record bytes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = crit.get(("fetch_path", "kwire_validate_vectored_fetch"), {}).get("ns")
    for cid, gfn, label in FETCH_PATH:
        c = crit.get(("fetch_path", cid))
        ns = c["ns"] if c else None
        t = f"{fmt_ns(ns)} [{fmt_ns(c['lo'])}, {fmt_ns(c['hi'])}]" if c else "–"
        per = (f"{ns / records:.3f} ns" if ns / records < 1 else fmt_ns(ns / records)) if ns else "–"
        vs = f"{ns / base:.3g}×" if ns and base else "–"
        ir = gg.get((gfn, "request_1mb")) if gfn else None
        irs = f"{ir:,}" if ir is not None else "–"
        irp = f"{ir / records:,.1f}" if ir is not None else "–"
        w, rec = written[cid]
        rows.append(f"| {label} | {t} | {per} | {vs} | {irs} | {irp} | {w / records:.2f} | {rec / records:.2f} |")
    rows.append("")
    kp = crit.get(("fetch_path", "kafka_protocol_decode_encode"), {}).get("ns")
    crc = crit.get(("fetch_path", "crc32c"), {}).get("ns")
    rows.append("Targets:")
    rows.append("")
    rows.append(f"- no record byte copied by kwire: **{'met' if facts['kwire_record_bytes_copied'] == 0 else 'missed'}** "
                f"(the bench checks that every record byte of the response is sent from the log's own buffer; the "
                f"{facts['kwire_buf_bytes']:,} bytes kwire writes are the frame's size, header and partition metadata);")
    if base and kp:
        rows.append(f"- at least 10× kafka-protocol: **{'met' if kp / base >= 10 else 'missed'}** ({kp / base:.1f}×);")
    if base and crc:
        rows.append(f"- within 2× of the CRC-32C of the same bytes: **{'met' if base / crc <= 2 else 'missed'}** "
                    f"({base / crc:.2f}× the CRC's time).")
    rows.append("")
    if facts.get("same_response") is not None:
        rows.append("kafka-protocol's response is " + ("byte for byte kwire's." if facts["same_response"]
                                                        else "not byte for byte kwire's (see the bench's output)."))
        rows.append("")
    rows += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in machine(meta, crit)]
    rows += ["", "<!-- fetch-path:end -->"]
    return rows


def write_fetch_path(crit, gg, meta, doc_path):
    facts_path = os.path.join(ROOT, "target", "fetch-path.json")
    if not os.path.exists(facts_path) or ("fetch_path", "kwire_validate_vectored_fetch") not in crit:
        return False
    with open(facts_path) as f:
        facts = json.load(f)
    block = "\n".join(fetch_path_section(crit, gg, meta, facts))
    doc = open(doc_path).read()
    pattern = re.compile(r"<!-- fetch-path:begin -->.*?<!-- fetch-path:end -->", re.S)
    if not pattern.search(doc):
        sys.exit(f"{os.path.relpath(doc_path, ROOT)} has no <!-- fetch-path:begin --> ... <!-- fetch-path:end --> markers")
    with open(doc_path, "w") as f:
        f.write(pattern.sub(lambda _: block, doc))
    print(f"wrote the broker path section of {os.path.relpath(doc_path, ROOT)}")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meta", default=os.path.join(ROOT, "target", "bench-meta.json"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "bench-chart.svg"))
    ap.add_argument("--records-doc", default=os.path.join(ROOT, "docs", "records.md"))
    ap.add_argument("--fetch-path", action="store_true",
                    help="only the broker path section of docs/records.md (benches/fetch_path.rs)")
    args = ap.parse_args()
    if args.fetch_path:
        meta = {}
        if os.path.exists(args.meta):
            with open(args.meta) as f:
                meta = json.load(f)
        if not write_fetch_path(load_criterion(ROOT), load_gungraun(ROOT), meta, args.records_doc):
            sys.exit("no fetch_path results: run `cargo bench --bench fetch_path` first")
        return

    crit = load_criterion(ROOT)
    if not crit:
        sys.exit("no criterion results under target/criterion: run `cargo bench --bench codec` first")
    gg = load_gungraun(ROOT)
    meta = {}
    if os.path.exists(args.meta):
        with open(args.meta) as f:
            meta = json.load(f)

    md = ["<!-- report:begin -->", "<!-- Generated by benches/report.py; edit the script, not this section. -->", ""]
    md += ["### Machine", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in machine(meta, crit)] + [""]
    md += ["### Targets", ""] + targets(crit, gg, meta)
    md += ["### Summary", ""] + summary_table(crit)
    md += ["### odradek-protocol and nisshi-sans-io", ""] + peers_summary_table(crit)
    md += ["### Record batches", ""] + records_table(crit)
    md += ["### Record encryption", ""] + encrypt_table(crit)
    md += ["### encoded_len against the partition count", ""] + scaling_table(crit, gg)
    md += ["### A tenant's renaming", ""] + tenant_table(crit)
    if gg:
        md += ["### Instructions per element", ""] + per_element_table(gg)
    md += ["### Every frame", ""]
    if not gg:
        md += ["(No instruction counts: gungraun-runner 0.20.0 was not installed for this run.)", ""]
    for name in SEED + REALISTIC:
        if any(group == name for group, _ in crit):
            md += frame_table(name, crit, gg)
    md += ["<!-- report:end -->"]
    block = "\n".join(md)

    doc = open(args.doc).read() if os.path.exists(args.doc) else "# Benchmarks\n\n<!-- report:begin -->\n<!-- report:end -->\n"
    pattern = re.compile(r"<!-- report:begin -->.*?<!-- report:end -->", re.S)
    if not pattern.search(doc):
        doc = doc.rstrip("\n") + "\n\n<!-- report:begin -->\n<!-- report:end -->\n"
    doc = pattern.sub(lambda _: block, doc)
    with open(args.doc, "w") as f:
        f.write(doc)
    readme = os.path.join(ROOT, "README.md")
    if os.path.exists(readme):
        text = open(readme).read()
        marks = re.compile(r"<!-- bench:begin -->.*?<!-- bench:end -->", re.S)
        if marks.search(text):
            block = "\n".join(["<!-- bench:begin -->", "<!-- Generated by benches/report.py. -->", ""]
                              + readme_block(crit, meta) + ["<!-- bench:end -->"])
            with open(readme, "w") as f:
                f.write(marks.sub(lambda _: block, text))
    write_fetch_path(crit, gg, meta, args.records_doc)
    drew = chart(crit, args.svg)
    print(f"wrote {os.path.relpath(args.doc, ROOT)}" + (f" and {os.path.relpath(args.svg, ROOT)}" if drew else ""))


if __name__ == "__main__":
    main()

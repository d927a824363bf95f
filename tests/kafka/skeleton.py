#!/usr/bin/env python3
"""Writes src/codec/schema/<Name>.json from Kafka's schema of the same name.

Carries over the wire facts only (names, types, versions, nullable, tagged and
flexible ranges, tags, defaults, ignorable, map keys, common structs) and cuts
a version that Kafka marks `latestVersionUnstable`. Kafka's prose is never
copied: every `about` comes from an existing file of ours (same path), from a
description file of our own (see below), or is left as the placeholder "TODO",
which must be replaced before the file is committed.

Usage: tests/kafka/skeleton.py [--desc FILE] Name...   (after tests/kafka/fetch.sh)

Description file: "@Name" starts a message; then one "path: text" per line,
where path is "." for the message itself, "Field.Sub" for nested fields and
"#Struct.Field" for a field of a common struct.
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KAFKA = ROOT / "target/kafka/message"
OURS = ROOT / "src/codec/schema"
FIELD_KEYS = ["name", "type", "versions", "nullableVersions", "flexibleVersions", "mapKey",
              "tag", "taggedVersions", "default", "ignorable"]


def load_kafka(name):
    text = (KAFKA / f"{name}.json").read_text()
    return json.loads("\n".join(re.sub(r"^\s*//.*$", "", l) for l in text.split("\n")))


def read_desc(path):
    out, cur = {}, None
    for line in Path(path).read_text().splitlines():
        if not line.strip() or line.startswith(";"):
            continue
        if line.startswith("@"):
            cur = out.setdefault(line[1:].strip(), {})
            continue
        key, text = line.split(":", 1)
        cur[key.strip()] = text.strip()
    return out


def old_abouts(name):
    p = OURS / f"{name}.json"
    if not p.exists():
        return {}
    d, out = json.loads(p.read_text()), {}
    out["."] = d.get("about", "TODO")

    def walk(fields, prefix):
        for f in fields:
            out[prefix + f["name"]] = f.get("about", "TODO")
            walk(f.get("fields", []), prefix + f["name"] + ".")
    walk(d.get("fields", []), "")
    for s in d.get("commonStructs", []):
        walk(s["fields"], "#" + s["name"] + ".")
    return out


def convert(name, desc):
    k = load_kafka(name)
    abouts = old_abouts(name)
    abouts.update({p: t for p, t in desc.get(name, {}).items()})
    out = {}
    for key in ["apiKey", "type", "name", "validVersions", "flexibleVersions"]:
        if key in k:
            out[key] = k[key]
    # Kafka marks an unstable latest version on the request only; it holds for both.
    request = name[: -len("Response")] + "Request" if name.endswith("Response") else name
    if (KAFKA / f"{request}.json").exists() and load_kafka(request).get("latestVersionUnstable"):
        lo, hi = k["validVersions"].split("-")
        out["validVersions"] = lo if int(hi) - 1 == int(lo) else f"{lo}-{int(hi) - 1}"
        print(f"{name}: cut unstable version {hi}", file=sys.stderr)
    out["about"] = abouts.get(".", "TODO")

    def fields(fs, prefix):
        res = []
        for f in fs:
            g = {key: f[key] for key in FIELD_KEYS if key in f}
            if "default" in g and not isinstance(g["default"], str):
                g["default"] = json.dumps(g["default"])
            g["about"] = abouts.get(prefix + f["name"], "TODO")
            if "fields" in f:
                g["fields"] = fields(f["fields"], prefix + f["name"] + ".")
            res.append(g)
        return res

    out["fields"] = fields(k.get("fields", []), "")
    if "commonStructs" in k:
        out["commonStructs"] = [
            {"name": s["name"], "versions": s["versions"],
             "fields": fields(s["fields"], "#" + s["name"] + ".")}
            for s in k["commonStructs"]]
    (OURS / f"{name}.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    todo = json.dumps(out).count('"TODO"')
    if todo:
        print(f"{name}: {todo} TODO", file=sys.stderr)


def main(argv):
    desc = {}
    if argv[:1] == ["--desc"]:
        desc, argv = read_desc(argv[1]), argv[2:]
    for name in argv:
        convert(name, desc)


if __name__ == "__main__":
    main(sys.argv[1:])

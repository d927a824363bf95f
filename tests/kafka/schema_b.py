#!/usr/bin/env python3
"""Helper for writing src/codec/schema files for API keys 35 and up from Apache
Kafka's message JSON (which is never committed).

  schema_b.py list NAME...   show Kafka's structure of messages, to write descriptions
  schema_b.py build NAME...  write src/codec/schema/NAME.json from facts + our descriptions
  schema_b.py check          compare every src/codec/schema file of key >= 35 with Kafka's facts

KAFKA_MESSAGES names the directory of Kafka's message JSON (default
target/kafka/message, filled by tests/kafka/fetch.sh); DESC_DIR the directory of description files, one
`<Name>.txt` a message, lines `path = text` (path `.` is the message itself,
`common:Struct.Field` names a common struct's field). Without a description
file, `build` takes the descriptions from the current src/codec/schema file.
"""
import glob, json, os, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KDIR = os.environ.get("KAFKA_MESSAGES", os.path.join(ROOT, "target/kafka/message"))
DESC = os.environ.get("DESC_DIR")
OUT = os.path.join(ROOT, "src/codec/schema")

# Facts carried over, in the order they are written.
FIELD_KEYS = ["name", "type", "versions", "flexibleVersions", "nullableVersions",
              "tag", "taggedVersions", "mapKey", "default", "ignorable"]
DROP = {"about", "entityType", "zeroCopy", "fields"}


def strip_comments(t):
    out, i, n, ins = [], 0, len(t), False
    while i < n:
        c = t[i]
        if ins:
            out.append(c)
            if c == "\\":
                out.append(t[i + 1]); i += 2; continue
            if c == '"':
                ins = False
            i += 1; continue
        if c == '"':
            ins = True; out.append(c); i += 1; continue
        if t.startswith("//", i):
            j = t.find("\n", i); i = n if j < 0 else j; continue
        out.append(c); i += 1
    return "".join(out)


def kafka(name):
    with open(os.path.join(KDIR, name + ".json")) as f:
        return json.loads(strip_comments(f.read()))


def kafka_all():
    r = {}
    for p in sorted(glob.glob(os.path.join(KDIR, "*.json"))):
        with open(p) as f:
            m = json.loads(strip_comments(f.read()))
        r[os.path.basename(p)[:-5]] = m
    return r


# Our own wording for fields that mean the same wherever they appear.
# (name, type, top) -> text; top is True at the message's top level.
DEFAULTS = {
    ("ThrottleTimeMs", "int32", True): "Milliseconds by which the broker delayed this response because a quota was exceeded; 0 when no quota was exceeded.",
    ("ErrorCode", "int16", True): "Error code for the request as a whole; 0 means success.",
    ("ErrorCode", "int16", False): "Error code for this entry; 0 means success.",
    ("PartitionIndex", "int32", False): "Index of the partition.",
    ("TopicName", "string", False): "Name of the topic.",
    ("TopicId", "uuid", False): "Unique ID of the topic.",
}


def desc_from_schema(name):
    """Our descriptions from an existing src/codec/schema file, keyed like a description file."""
    d = {}
    p = os.path.join(OUT, name + ".json")
    if not os.path.exists(p):
        return d
    with open(p) as f:
        o = json.load(f)
    d["."] = o.get("about", "")
    groups = [("", o.get("fields", []))] + [
        ("common:" + c["name"] + ".", c["fields"]) for c in o.get("commonStructs", [])]
    for pre, fs in groups:
        for path, f, _ in walk(fs, pre):
            if f.get("about"):
                d[path] = f["about"]
    return d


def read_desc(name):
    """Descriptions from DESC_DIR/<name>.txt when it exists, else from our current schema
    file, so that a rebuild against a newer Kafka keeps every description and lists the
    fields that still need one."""
    p = DESC and os.path.join(DESC, name + ".txt")
    if not p or not os.path.exists(p):
        return desc_from_schema(name)
    d = {}
    with open(p) as f:
        for ln in f:
            ln = ln.rstrip("\n")
            if not ln.strip() or ln.startswith("#"):
                continue
            k, _, v = ln.partition(" = ")
            d[k.strip()] = v.strip()
    return d


def walk(fields, prefix, top=True):
    for f in fields:
        path = prefix + f["name"]
        yield path, f, top
        if "fields" in f:
            yield from walk(f["fields"], path + ".", False)


def default_for(f, top):
    if f["name"] == "ErrorMessage" and f["type"] == "string":
        whose = "the error" if top else "this entry's error"
        if f.get("nullableVersions") == f.get("versions"):
            return f"Human-readable detail about {whose}, or null when there is none."
        return None
    return DEFAULTS.get((f["name"], f["type"], top))


def cmd_list(names):
    for n in names:
        m = kafka(n)
        print(f"## {n} key={m.get('apiKey')} valid={m['validVersions']} flex={m.get('flexibleVersions')}")
        print(f". :: {m.get('about', '')}")
        groups = [("", m.get("fields", []))] + [
            (f"common:{c['name']}.", c["fields"]) for c in m.get("commonStructs", [])]
        for c in m.get("commonStructs", []):
            print(f"common:{c['name']} (common struct, versions {c['versions']})")
        for pre, fs in groups:
            for path, f, top in walk(fs, pre, pre == ""):
                attrs = " ".join(f"{k}={f[k]}" for k in FIELD_KEYS[2:] if k in f)
                d = default_for(f, top)
                mark = f"   [default: {d}]" if d else ""
                print(f"{path} ({f['type']} {attrs}) :: {f.get('about', '')}{mark}")
        print()


def as_text(v):
    return v if isinstance(v, str) else json.dumps(v)


def convert_field(f, path, top, desc, missing):
    o = {}
    for k in FIELD_KEYS:
        if k in f:
            o[k] = f[k]
    if "default" in o:
        # Kafka writes a few defaults as JSON numbers or booleans; the project's
        # files write every default as a string.
        o["default"] = as_text(o["default"])
    extra = set(f) - set(FIELD_KEYS) - DROP
    if extra:
        raise SystemExit(f"{path}: unknown keys {extra}")
    about = desc.get(path) or default_for(f, top)
    if not about:
        missing.append(path)
        about = "TODO"
    o["about"] = about
    if "fields" in f:
        o["fields"] = [convert_field(c, path + "." + c["name"], False, desc, missing) for c in f["fields"]]
    return o


def convert(name):
    m = kafka(name)
    desc = read_desc(name)
    missing = []
    valid = m["validVersions"]
    if m.get("latestVersionUnstable"):
        raise SystemExit(f"{name}: latest version unstable; handle by hand")
    o = {"apiKey": m["apiKey"], "type": m["type"], "name": m["name"], "validVersions": valid,
         "flexibleVersions": m["flexibleVersions"]}
    if "." not in desc:
        missing.append(".")
    o["about"] = desc.get(".", "TODO")
    o["fields"] = [convert_field(f, f["name"], True, desc, missing) for f in m.get("fields", [])]
    if m.get("commonStructs"):
        cs = []
        for c in m["commonStructs"]:
            key = "common:" + c["name"]
            # Common structs carry no about (tests/kafka_schemas.rs allows only name,
            # versions and fields); their fields do.
            cs.append({"name": c["name"], "versions": c["versions"],
                       "fields": [convert_field(f, key + "." + f["name"], False, desc, missing) for f in c["fields"]]})
        o["commonStructs"] = cs
    extra = set(m) - {"apiKey", "type", "name", "validVersions", "flexibleVersions", "fields",
                      "commonStructs", "about", "listeners", "latestVersionUnstable"}
    if extra:
        raise SystemExit(f"{name}: unknown top-level keys {extra}")
    unused = set(desc) - {"."} - {p for p, _, _ in walk(m.get("fields", []), "")} - {
        "common:" + c["name"] for c in m.get("commonStructs", [])} - {
        p for c in m.get("commonStructs", []) for p, _, _ in walk(c["fields"], "common:" + c["name"] + ".")}
    if unused:
        print(f"{name}: description paths that match nothing: {sorted(unused)}", file=sys.stderr)
    return o, missing


def cmd_build(names):
    bad = 0
    for n in names:
        o, missing = convert(n)
        with open(os.path.join(OUT, n + ".json"), "w") as f:
            json.dump(o, f, indent=2, ensure_ascii=False)
            f.write("\n")
        if missing:
            bad += 1
            print(f"{n}: {len(missing)} without description: {missing}", file=sys.stderr)
    sys.exit(1 if bad else 0)


# ---- check -----------------------------------------------------------------

FACT_KEYS = ["type", "versions", "flexibleVersions", "nullableVersions", "tag",
             "taggedVersions", "mapKey", "default", "ignorable"]


def cmp_fields(ours, theirs, path, errs, kafka_abouts):
    on = [f.get("name") for f in ours]
    tn = [f["name"] for f in theirs]
    if on != tn:
        errs.append(f"{path}: field names/order {on} != {tn}")
        return
    for a, b in zip(ours, theirs):
        p = f"{path}.{a['name']}"
        for k in FACT_KEYS:
            if k == "default" and "default" in a and "default" in b:
                if not isinstance(a[k], str) or a[k] != as_text(b[k]):
                    errs.append(f"{p}: default {a[k]!r} != {b[k]!r}")
            elif a.get(k) != b.get(k):
                errs.append(f"{p}: {k} {a.get(k)!r} != {b.get(k)!r}")
        allowed = set(FACT_KEYS) | {"name", "about", "fields"}
        if set(a) - allowed:
            errs.append(f"{p}: unexpected keys {set(a) - allowed}")
        check_about(a, p, errs, kafka_abouts, b.get("about"))
        if ("fields" in a) != ("fields" in b):
            errs.append(f"{p}: nested fields present in one side only")
        elif "fields" in a:
            cmp_fields(a["fields"], b["fields"], p, errs, kafka_abouts)


def norm(s):
    return " ".join("".join(c.lower() if c.isalnum() else " " for c in s).split())


def check_about(o, p, errs, kafka_abouts, theirs):
    ab = o.get("about")
    if not isinstance(ab, str) or not ab.strip() or "TODO" in ab:
        errs.append(f"{p}: missing or placeholder about")
        return
    if norm(ab) in kafka_abouts:
        errs.append(f"{p}: about equals a Kafka description: {ab!r}")
    if theirs and norm(theirs) == norm(ab):
        errs.append(f"{p}: about copies Kafka's")


def cmd_check():
    ka = kafka_all()
    kafka_abouts = set()
    def collect(fs):
        for f in fs:
            if f.get("about") and len(norm(f["about"])) > 25:
                kafka_abouts.add(norm(f["about"]))
            collect(f.get("fields", []))
    for m in ka.values():
        if m.get("about") and len(norm(m["about"])) > 25:
            kafka_abouts.add(norm(m["about"]))
        collect(m.get("fields", []))
        for c in m.get("commonStructs", []):
            collect(c["fields"])
    errs = []
    expected = sorted(n for n, m in ka.items()
                      if m.get("type") in ("request", "response") and m.get("apiKey", -1) >= 35)
    for n in expected:
        p = os.path.join(OUT, n + ".json")
        if not os.path.exists(p):
            errs.append(f"{n}: schema file missing")
            continue
        with open(p) as f:
            o = json.load(f)
        m = ka[n]
        valid = m["validVersions"]
        if m.get("latestVersionUnstable"):
            lo, _, hi = valid.partition("-")
            valid = lo if int(hi) - 1 == int(lo) else f"{lo}-{int(hi) - 1}"
        for k, want in [("apiKey", m["apiKey"]), ("type", m["type"]), ("name", m["name"]),
                        ("validVersions", valid), ("flexibleVersions", m["flexibleVersions"])]:
            if o.get(k) != want:
                errs.append(f"{n}: {k} {o.get(k)!r} != {want!r}")
        allowed = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "about", "fields", "commonStructs"}
        if set(o) - allowed:
            errs.append(f"{n}: unexpected top-level keys {set(o) - allowed}")
        check_about(o, n, errs, kafka_abouts, m.get("about"))
        cmp_fields(o.get("fields", []), m.get("fields", []), n, errs, kafka_abouts)
        oc, tc = o.get("commonStructs", []), m.get("commonStructs", [])
        if [c["name"] for c in oc] != [c["name"] for c in tc]:
            errs.append(f"{n}: commonStructs {[c['name'] for c in oc]} != {[c['name'] for c in tc]}")
        else:
            for a, b in zip(oc, tc):
                p = f"{n}.common:{a['name']}"
                if a.get("versions") != b.get("versions"):
                    errs.append(f"{p}: versions {a.get('versions')!r} != {b.get('versions')!r}")
                if set(a) - {"name", "versions", "fields"}:
                    errs.append(f"{p}: unexpected keys {set(a) - {'name', 'versions', 'fields'}}")
                cmp_fields(a["fields"], b["fields"], p, errs, kafka_abouts)
    for e in errs:
        print(e)
    print(f"checked {len(expected)} messages: {len(errs)} problems")
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    {"list": cmd_list, "build": cmd_build, "check": lambda _: cmd_check()}[cmd](args)

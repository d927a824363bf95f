#!/usr/bin/env bash
# `kwire decode` of a large capture as a stream, beside `tshark -r` on the same file: MB/s
# and peak RSS (GNU time's "Maximum resident set size").
#
#   bash benches/capture.sh          # SIZE_MB=1100 TSHARK_TIMEOUT=1800 KWIRE=path/to/kwire
#
# The capture is made here (target/bench-capture/big.pcap): one TCP session on loopback
# (Ethernet, IPv4: handshake, every request/response pair of tests/vectors/clients and the
# Produce requests of tests/vectors/records with their answers, in
# 1448-byte segments, FIN) repeated until the file holds SIZE_MB megabytes. Each repetition
# is a new connection on the same addresses (its SYN follows the last one's FINs).
#
# kwire is measured in three modes: the reader alone (no frame decoded), the pair lines
# (default: every frame checked by the typed views, as `kwire proxy` does) and --format json
# (every frame walked into its JSON document and checked by the typed views). tshark dissects Kafka on the port (-o
# kafka.tcp.ports:9092) and prints its one-line summaries to /dev/null; it is stopped
# after TSHARK_TIMEOUT seconds, and its rate is then over the bytes it got through (not
# measured: reported as a timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${SIZE_MB:-1100}
dir=target/bench-capture
mkdir -p "$dir"
file=$dir/big.pcap

if [ -z "${KWIRE:-}" ]; then
  cargo build --release --quiet --features cli
  KWIRE=target/release/kwire
fi

python3 - "$file" "$size_mb" <<'PY'
import glob, os, struct, sys
out_path, size_mb = sys.argv[1], int(sys.argv[2])
def rd(p): return bytes.fromhex(''.join(open(p).read().split()))
pairs = []
for q in sorted(glob.glob('tests/vectors/clients/requests/*.hex')):
    pairs.append((rd(q), rd(q.replace('/requests/', '/responses/'))))
# Produce requests with record batches (every codec) and their answers.
for q in sorted(glob.glob('tests/vectors/records/requests/*.hex')):
    pairs.append((rd(q), rd(q.replace('/requests/', '/responses/'))))
client, broker = (b'\x7f\x00\x00\x01', 50000), (b'\x7f\x00\x00\x01', 9092)
pkts = []
seq = {0: 1000, 1: 900000}
def pkt(side, flags, payload=b''):
    s, d = (client, broker) if side == 0 else (broker, client)
    ack = seq[1 - side]
    tcp = struct.pack('>HHIIBBHHH', s[1], d[1], seq[side], ack, 0x50, flags, 65535, 0, 0) + payload
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, s[0], d[0])
    eth = b'\x00' * 12 + b'\x08\x00'
    seq[side] = (seq[side] + len(payload) + (1 if flags & 3 else 0)) & 0xffffffff
    pkts.append(eth + ip + tcp)
pkt(0, 0x02); pkt(1, 0x12); pkt(0, 0x10)
corr = 0
for q, r in pairs:
    corr += 1
    q = bytearray(q); q[8:12] = struct.pack('>i', corr)
    for i in range(0, len(q), 1448):
        pkt(0, 0x18, bytes(q[i:i + 1448]))
    r = bytearray(r); r[4:8] = struct.pack('>i', corr)
    for i in range(0, len(r), 1448):
        pkt(1, 0x18, bytes(r[i:i + 1448]))
pkt(0, 0x11); pkt(1, 0x11); pkt(0, 0x10)
t = 1764730000
session = b''.join(struct.pack('<IIII', t, i, len(p), len(p)) + p for i, p in enumerate(pkts))
with open(out_path, 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
    n = (size_mb * 1_000_000) // len(session) + 1
    block = session * max(1, (8 << 20) // len(session))
    reps = n // (len(block) // len(session))
    for _ in range(reps):
        f.write(block)
    for _ in range(n - reps * (len(block) // len(session))):
        f.write(session)
print(f"capture: {os.path.getsize(out_path) / 1e6:.0f} MB, {len(pkts)} packets and {len(pairs)} requests a session")
PY

bytes=$(stat -c %s "$file")
measure() { # name, command...
  local name=$1; shift
  local t0 t1 rss status=ok
  t0=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$dir/time.txt" "$@" >/dev/null 2>"$dir/$name.err" || status="exit $?"
  t1=$(date +%s.%N)
  rss=$(tail -n 1 "$dir/time.txt")
  python3 -c "import sys; b,t,r=float(sys.argv[1]),float(sys.argv[2])-float(sys.argv[3]),int(sys.argv[4]); print(f'{sys.argv[5]:28} {b/1e6/t:8.1f} MB/s  {t:7.1f} s  peak RSS {r/1024:7.1f} MiB  ({sys.argv[6]})')" \
    "$bytes" "$t1" "$t0" "$rss" "$name" "$status"
}
echo "$(date -u +%Y-%m-%d) $(nproc) cpus; $("$KWIRE" --version); $(tshark --version 2>/dev/null | sed -n 1p)"
# --frame past the last frame: the reader alone (container, TCP, Kafka framing and
# pairing), nothing decoded or printed; it ends with "there is no frame N" (exit 1).
measure "kwire reader only" "$KWIRE" decode --frame 999999999999 "$file"
measure "kwire decode (lines)" "$KWIRE" decode "$file"
tail -n 1 "$dir/kwire decode (lines).err"
measure "kwire decode --format json" "$KWIRE" decode --format json "$file"
if command -v tshark >/dev/null; then
  measure "tshark -r" timeout "${TSHARK_TIMEOUT:-1800}" tshark -r "$file" -o kafka.tcp.ports:9092
fi

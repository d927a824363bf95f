//! Record batches: the captured client frames of `tests/vectors/records`, hostile inputs,
//! legacy message sets, encoding and compression round trips.

mod common;

use kwire::records::{
    BatchBuilder, Compression, ControlRecordType, ErrorKind, NewHeader, NewRecord, Record, RecordBatch, RecordBatches,
};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// A minimal Produce request reader, enough to reach the `records` bytes.

struct Rd<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        s
    }
    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    fn uvarint(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.take(1)[0];
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }
    fn tagged(&mut self) {
        for _ in 0..self.uvarint() {
            self.uvarint();
            let n = self.uvarint() as usize;
            self.take(n);
        }
    }
    fn string(&mut self, flexible: bool) -> Option<&'a [u8]> {
        let n = if flexible { self.uvarint() as i64 - 1 } else { i64::from(self.i16()) };
        (n >= 0).then(|| self.take(n as usize))
    }
    fn bytes(&mut self, flexible: bool) -> Option<&'a [u8]> {
        let n = if flexible { self.uvarint() as i64 - 1 } else { i64::from(self.i32()) };
        (n >= 0).then(|| self.take(n as usize))
    }
    fn count(&mut self, flexible: bool) -> usize {
        if flexible { self.uvarint() as usize - 1 } else { self.i32() as usize }
    }
}

/// (topic, partition, records bytes) of a Produce request frame.
fn produce_records(frame: &[u8]) -> (i16, Vec<(String, i32, &[u8])>) {
    let body = common::unframe(frame);
    let mut r = Rd { b: body, p: 0 };
    assert_eq!(r.i16(), 0, "api key");
    let version = r.i16();
    r.i32();
    let flexible = version >= 9;
    r.string(false); // client id (always a classic string)
    if flexible {
        r.tagged();
    }
    r.string(flexible); // transactional id
    r.i16();
    r.i32();
    let mut out = Vec::new();
    for _ in 0..r.count(flexible) {
        let topic = String::from_utf8(r.string(flexible).unwrap().to_vec()).unwrap();
        for _ in 0..r.count(flexible) {
            let partition = r.i32();
            let records = r.bytes(flexible).unwrap();
            out.push((topic.clone(), partition, records));
            if flexible {
                r.tagged();
            }
        }
        if flexible {
            r.tagged();
        }
    }
    if flexible {
        r.tagged();
    }
    assert_eq!(r.p, body.len(), "Produce body fully read");
    (version, out)
}

fn expected_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::Object(m) if m.contains_key("utf8") => Some(m["utf8"].as_str().unwrap().as_bytes().to_vec()),
        Value::Object(m) if m.contains_key("hex") => Some(common::hex(m["hex"].as_str().unwrap())),
        other => panic!("unexpected value {other}"),
    }
}

fn index() -> Value {
    let text = std::fs::read_to_string(common::vectors_dir().join("records/index.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Decodes a records field (any codec) into owned tuples with the batch index.
type Flat = (String, i32, usize, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>, i64);

fn flatten(record: &Record<'_>) -> (Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>, i64) {
    (
        record.key().map(<[u8]>::to_vec),
        record.value().map(<[u8]>::to_vec),
        record.headers().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect(),
        record.timestamp(),
    )
}

#[test]
fn client_frames_decode_to_their_records() {
    let index = index();
    let files = index["files"].as_object().unwrap();
    assert_eq!(files.len(), 19);
    let mut codecs_seen = std::collections::BTreeSet::new();
    let mut scratch = vec![0u8; 1 << 20];
    for (name, facts) in files {
        let frame = common::vector(&format!("records/{}", facts["request"].as_str().unwrap()));
        let (version, partitions) = produce_records(&frame);
        assert_eq!(i64::from(version), facts["api_version"].as_i64().unwrap(), "{name}");
        let layout = facts["layout"].as_array().unwrap();
        assert_eq!(partitions.len(), layout.len(), "{name}: partitions");
        let mut got: Vec<Flat> = Vec::new();
        for ((topic, partition, bytes), lay) in partitions.iter().zip(layout) {
            assert_eq!(topic, lay["topic"].as_str().unwrap(), "{name}");
            assert_eq!(i64::from(*partition), lay["partition"].as_i64().unwrap(), "{name}");
            assert_eq!(bytes.len() as i64, lay["records_bytes"].as_i64().unwrap(), "{name}");
            let mut batches = RecordBatches::new(bytes);
            let want_batches = lay["batches"].as_array().unwrap();
            let mut n = 0;
            for (bi, batch) in batches.by_ref().enumerate() {
                let batch = batch.unwrap_or_else(|e| panic!("{name}: {e}"));
                let want = &want_batches[bi];
                let h = batch.header();
                assert_eq!(h.base_offset.get(), want["base_offset"].as_i64().unwrap(), "{name}");
                assert_eq!(i64::from(batch.batch_length()), want["batch_length"].as_i64().unwrap(), "{name}");
                assert_eq!(format!("{:08x}", batch.crc()), want["crc"].as_str().unwrap(), "{name}");
                assert_eq!(batch.computed_crc(), batch.crc(), "{name}: CRC-32C");
                assert_eq!(i64::from(batch.attributes().0), want["attributes"].as_i64().unwrap(), "{name}");
                assert_eq!(i64::from(batch.records_count()), want["records_count"].as_i64().unwrap(), "{name}");
                assert_eq!(i64::from(batch.last_offset_delta()), want["last_offset_delta"].as_i64().unwrap());
                assert_eq!(batch.base_timestamp(), want["base_timestamp"].as_i64().unwrap(), "{name}");
                assert_eq!(batch.max_timestamp(), want["max_timestamp"].as_i64().unwrap(), "{name}");
                assert_eq!(batch.producer_id(), want["producer_id"].as_i64().unwrap(), "{name}");
                assert_eq!(i64::from(batch.producer_epoch()), want["producer_epoch"].as_i64().unwrap());
                assert_eq!(i64::from(batch.base_sequence()), want["base_sequence"].as_i64().unwrap());
                assert_eq!(
                    i64::from(batch.partition_leader_epoch()),
                    want["partition_leader_epoch"].as_i64().unwrap()
                );
                assert_eq!(batch.is_transactional(), want["attributes"].as_i64().unwrap() & 0x10 != 0);
                let codec = batch.compression().unwrap();
                codecs_seen.insert(format!("{codec:?}"));
                // The slice path and the Vec path must agree.
                let records: Vec<_> = batch
                    .records_in(&mut scratch)
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
                    .map(|r| r.unwrap_or_else(|e| panic!("{name}: {e}")))
                    .map(|r| {
                        assert_eq!(r.offset(), batch.base_offset() + i64::from(r.offset_delta()));
                        flatten(&r)
                    })
                    .collect();
                let mut vec = Vec::new();
                let again: Vec<_> =
                    batch.records_in_vec(&mut vec, 1 << 20).unwrap().map(|r| flatten(&r.unwrap())).collect();
                assert_eq!(records, again, "{name}");
                if codec == Compression::None {
                    let plain: Vec<_> = batch.records().unwrap().map(|r| flatten(&r.unwrap())).collect();
                    assert_eq!(records, plain, "{name}");
                } else {
                    assert_eq!(batch.records().unwrap_err().kind(), ErrorKind::Compressed(codec));
                }
                for (k, v, hs, ts) in records {
                    got.push((topic.clone(), *partition, bi, k, v, hs, ts));
                }
                n += 1;
            }
            assert!(!batches.partial(), "{name}");
            assert_eq!(n, want_batches.len(), "{name}");
        }
        let want = facts["records"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{name}: record count");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.0, w["topic"].as_str().unwrap(), "{name}");
            assert_eq!(i64::from(g.1), w["partition"].as_i64().unwrap(), "{name}");
            assert_eq!(g.2 as i64, w["batch"].as_i64().unwrap(), "{name}");
            assert_eq!(g.3, expected_bytes(&w["key"]), "{name}: key of record {}", w["i"]);
            assert_eq!(g.4, expected_bytes(&w["value"]), "{name}: value of record {}", w["i"]);
            let headers: Vec<(Vec<u8>, Option<Vec<u8>>)> = w["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h["key"].as_str().unwrap().as_bytes().to_vec(), expected_bytes(&h["value"])))
                .collect();
            assert_eq!(g.5, headers, "{name}: headers of record {}", w["i"]);
            if let Some(ts) = w["timestamp"].as_i64() {
                assert_eq!(g.6, ts, "{name}: timestamp of record {}", w["i"]);
            }
        }
    }
    assert_eq!(codecs_seen.len(), 5, "every codec seen: {codecs_seen:?}");
}

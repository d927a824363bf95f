//! A broker's records path in one run: a 1 MB Produce request of
//! 1,000-record batches validated with its offsets assigned, then fetched back as one Fetch
//! response frame. kwire (`validate_and_assign` in place + `vectored::encode_response`)
//! beside kafka-protocol 0.18 (decode the records, assign, encode them and the response), a
//! plain copy of the batches (the floor) and their CRC-32C. See `benches/support/fetch_path.rs`.
//!
//! `cargo bench --bench fetch_path`; besides criterion's results it writes
//! `target/fetch-path.json` (sizes and bytes copied, measured here) for `benches/report.py
//! --fetch-path`, which fills the section of `docs/records.md`.

#[path = "support/batches.rs"]
mod batches;
#[path = "support/fetch_path.rs"]
mod fetch_path;

use std::hint::black_box;
use std::time::Duration;

use batches::RECORDS;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fetch_path::*;

/// Checks both paths' output before timing them, and writes what they copy.
fn facts(frame: &[u8]) {
    let batches = batches(frame);
    let batch_bytes: usize = batches.iter().map(|b| b.len()).sum();
    let records = PARTITIONS * RECORDS;

    // kwire: the parts that are in the log are its own bytes (nothing copied), the others
    // are the response's other bytes, in the head buffer.
    let mut log = frame.to_vec();
    let log_range = log.as_ptr_range();
    let mut s = KwireScratch::new();
    let (used, wire, from_log) = kwire_path(&mut log, &mut s, |used, iov| {
        let from_log: Vec<usize> =
            iov.iter().filter(|io| log_range.contains(&io.as_ptr())).map(|io| io.len()).collect();
        let wire: Vec<u8> = iov.iter().flat_map(|io| io.iter().copied()).collect();
        (used, wire, from_log)
    });
    assert_eq!(from_log.len(), PARTITIONS, "one part per batch, from the log");
    assert_eq!(from_log.iter().sum::<usize>(), batch_bytes, "every record byte from the log");
    assert_eq!(used.total - used.buf, batch_bytes);
    // The response is a Fetch response that decodes, with the assigned offsets.
    assert_eq!(wire.len(), used.total);
    let response = kwire::dispatch::parse_response(&wire[4..], kwire::ApiKey::Fetch, FETCH_VERSION).unwrap();
    assert_eq!(response.header.correlation_id(), 8);

    // kafka-protocol: the batches encoded again, then the response with them.
    let kp_frame = kafka_protocol_request(frame);
    let (kp_response, kp_batches) = kafka_protocol_path(&kp_frame);
    assert_eq!(kp_batches, batch_bytes, "kafka-protocol's batches have the same size");
    // Both brokers answer with the same bytes.
    let same = kp_response.as_ref() == wire.as_slice();
    eprintln!(
        "fetch_path: request {} bytes, {PARTITIONS} batches of {RECORDS} records ({batch_bytes} bytes); \
         kwire: {} parts, {} bytes written into its buffer, 0 record bytes copied; kafka-protocol: \
         {kp_batches} bytes of batches encoded + {} bytes of response; same response bytes: {same}",
        frame.len(),
        used.parts,
        used.buf,
        kp_response.len()
    );
    let json = format!(
        "{{\"request_bytes\": {}, \"partitions\": {PARTITIONS}, \"records\": {records}, \"batch_bytes\": {batch_bytes}, \
         \"kwire_parts\": {}, \"kwire_buf_bytes\": {}, \"kwire_record_bytes_copied\": 0, \"response_bytes\": {}, \
         \"kp_batch_bytes_encoded\": {kp_batches}, \"kp_response_bytes\": {}, \"same_response\": {same}}}\n",
        frame.len(),
        used.parts,
        used.buf,
        used.total,
        kp_response.len()
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("fetch-path.json"), json).unwrap();
}

fn bench(c: &mut Criterion) {
    let frame = produce_frame();
    facts(&frame);
    let batches = batches(&frame);
    let batch_bytes: usize = batches.iter().map(|b| b.len()).sum();

    let mut g = c.benchmark_group("fetch_path");
    g.throughput(Throughput::Bytes(batch_bytes as u64));
    // The log is validated again every iteration, after `as_received` put back the 12
    // bytes a batch that validation rewrote (timed with it).
    let mut log = frame.clone();
    let starts = batch_starts(&frame);
    let mut s = KwireScratch::new();
    g.bench_function("kwire_validate_vectored_fetch", |b| {
        b.iter(|| {
            as_received(&mut log, &starts);
            kwire_path(black_box(&mut log), &mut s, |len, iov| {
                black_box(iov);
                len.total
            })
        })
    });
    // Its two halves: validate-and-assign alone, and the vectored Fetch encode alone.
    g.bench_function("kwire_validate_only", |b| {
        b.iter(|| {
            as_received(&mut log, &starts);
            kwire_validate(black_box(&mut log), &mut s).high_watermarks[0]
        })
    });
    as_received(&mut log, &starts);
    let assigned = kwire_validate(&mut log, &mut s);
    let mut head = vec![0u8; 4096];
    g.bench_function("kwire_vectored_fetch_only", |b| {
        b.iter(|| {
            kwire_fetch(black_box(&log), &assigned, &mut head, |len, iov| {
                black_box(iov);
                len.total
            })
        })
    });
    let kp_frame = kafka_protocol_request(&frame);
    g.bench_function("kafka_protocol_decode_encode", |b| {
        b.iter(|| kafka_protocol_path(black_box(&kp_frame)).0.len())
    });
    let mut dst = vec![0u8; batch_bytes];
    g.bench_function("copy", |b| b.iter(|| copy(black_box(&batches), &mut dst)));
    g.bench_function("crc32c", |b| b.iter(|| crc(black_box(&batches))));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5)).sample_size(50);
    targets = bench
}
criterion_main!(benches);

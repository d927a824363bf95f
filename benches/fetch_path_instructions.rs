//! Instruction counts (gungraun, callgrind) of `benches/fetch_path.rs`'s four operations on
//! the same 1 MB Produce request: kwire's validate-and-assign plus vectored Fetch encode,
//! kafka-protocol's decode and encode, the copy floor and CRC-32C. Setup (building the
//! request, copying it into the buffer the path works on) is not counted.
//!
//! Needs the runner: `cargo install gungraun-runner --version 0.20.0 --locked`, then
//! `cargo bench --bench fetch_path_instructions`.

#[path = "support/batches.rs"]
mod batches;
#[path = "support/fetch_path.rs"]
mod fetch_path;

use std::hint::black_box;

use fetch_path::*;
use gungraun::prelude::*;

fn kwire_setup() -> (Vec<u8>, KwireScratch) {
    (produce_frame(), KwireScratch::new())
}

#[library_benchmark]
#[bench::request_1mb(setup = kwire_setup)]
fn kwire_validate_vectored_fetch(input: (Vec<u8>, KwireScratch)) -> (Vec<u8>, KwireScratch) {
    let (mut log, mut s) = input;
    black_box(kwire_path(black_box(&mut log), &mut s, |len, iov| {
        black_box(iov);
        len.total
    }));
    (log, s)
}

#[library_benchmark]
#[bench::request_1mb(setup = kwire_setup)]
fn kwire_validate_only(input: (Vec<u8>, KwireScratch)) -> (Vec<u8>, KwireScratch) {
    let (mut log, mut s) = input;
    black_box(kwire_validate(black_box(&mut log), &mut s));
    (log, s)
}

fn fetch_setup() -> (Vec<u8>, Assigned, Vec<u8>) {
    let (mut log, mut s) = kwire_setup();
    let assigned = kwire_validate(&mut log, &mut s);
    (log, assigned, vec![0u8; 4096])
}

#[library_benchmark]
#[bench::request_1mb(setup = fetch_setup)]
fn kwire_vectored_fetch_only(input: (Vec<u8>, Assigned, Vec<u8>)) -> (Vec<u8>, Assigned, Vec<u8>) {
    let (log, assigned, mut head) = input;
    black_box(kwire_fetch(black_box(&log), &assigned, &mut head, |len, iov| {
        black_box(iov);
        len.total
    }));
    (log, assigned, head)
}

fn kp_setup() -> bytes::Bytes {
    kafka_protocol_request(&produce_frame())
}

#[library_benchmark]
#[bench::request_1mb(setup = kp_setup)]
fn kafka_protocol_decode_encode(frame: bytes::Bytes) -> bytes::Bytes {
    black_box(kafka_protocol_path(black_box(&frame)));
    frame
}

fn floor_setup() -> (Vec<Vec<u8>>, Vec<u8>) {
    let batches = owned_batches();
    let n = batches.iter().map(Vec::len).sum();
    (batches, vec![0u8; n])
}

#[library_benchmark]
#[bench::request_1mb(setup = floor_setup)]
fn copy_floor(input: (Vec<Vec<u8>>, Vec<u8>)) -> (Vec<Vec<u8>>, Vec<u8>) {
    let (batches, mut dst) = input;
    black_box(copy(black_box(&batches), &mut dst));
    (batches, dst)
}

#[library_benchmark]
#[bench::request_1mb(setup = owned_batches)]
fn crc32c(batches: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    black_box(crc(black_box(&batches)));
    batches
}

library_benchmark_group!(
    name = broker_path,
    benchmarks = [
        kwire_validate_vectored_fetch,
        kwire_validate_only,
        kwire_vectored_fetch_only,
        kafka_protocol_decode_encode,
        copy_floor,
        crc32c
    ]
);

main!(library_benchmark_groups = broker_path);

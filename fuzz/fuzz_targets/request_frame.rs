//! Arbitrary bytes as a stream of request frames: split, header parsed, dispatched, walked,
//! validated, and held against the reference decoder.
//! See `tests/fuzz_checks/mod.rs` for the properties and the selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::request_frame(data));

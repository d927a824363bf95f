//! Response bodies and frames of the API and version the first two bytes select, walked,
//! validated, and held against the reference decoder.
//! See `tests/fuzz_checks/mod.rs` for the properties and the selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::response(data));

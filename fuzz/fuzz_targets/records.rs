//! Record batches (and legacy message sets): views against the reference decoder.
//! See `tests/fuzz_checks/records.rs` for the properties and the selector byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::records::records(data));

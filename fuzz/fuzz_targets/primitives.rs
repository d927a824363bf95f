//! Varints, lengths, strings, bytes, array counts and tagged-field sections.
//! See `tests/fuzz_checks/mod.rs` for the properties and the selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::primitives(data));

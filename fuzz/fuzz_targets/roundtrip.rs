//! Arbitrary message values, sized, encoded and read back by the view and the reference
//! decoder at the version the second byte selects.
//! See `tests/fuzz_checks/mod.rs` for the properties and the selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::roundtrip(data));

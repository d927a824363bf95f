//! Validate-and-assign (`records::validate`) against the reference decoder.
//! See `tests/fuzz_checks/validate.rs` for the properties and the selector byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::validate::validate(data));

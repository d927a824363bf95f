//! Record encryption on hostile bytes: the envelope parser and the decryption path.
//! See `tests/fuzz_checks/encrypt.rs` for the properties and the selector byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::encrypt::encrypt(data));

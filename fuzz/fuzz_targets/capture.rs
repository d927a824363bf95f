//! A capture file, or a script of TCP segments written into one, through
//! `kwire::capture::Reader`: no panic, limits kept, whole frames whole.
//! See `tests/fuzz_checks/capture.rs` for the properties and the selector byte.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::capture::capture(data));

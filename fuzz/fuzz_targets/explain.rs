//! The frame explainer (`kwire::reflect::explain`) on any bytes, held against the typed
//! decoder. See `tests/fuzz_checks/explain.rs` for the properties and the selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::explain::explain(data));

//! Arbitrary bodies with `records` fields (Produce requests, Fetch, ShareFetch and
//! FetchSnapshot responses), encoded around their records and held against `encode`, as
//! bodies or whole frames. See `tests/fuzz_checks/vectored.rs` for the properties and the
//! selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::vectored::vectored(data));

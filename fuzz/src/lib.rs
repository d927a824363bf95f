//! The fuzz targets' checks. They live in the main crate's `tests/fuzz_checks` so that
//! `tests/fuzz_regressions.rs` replays crash inputs through exactly the same code.

#[path = "../../tests/fuzz_checks/mod.rs"]
pub mod checks;

//! Arbitrary bytes in arbitrary chunk sizes into `FrameBuf`, `ServerConn` and `ClientConn`:
//! no panic, bounded memory, exactly the frames `split_frame` finds.
//! See `tests/fuzz_checks/conn.rs` for the properties and the selector bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::checks::conn::conn(data));

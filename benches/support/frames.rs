//! The benchmarked frames, compiled in (so that no bench depends on the working directory
//! or the environment), for every bench crate: kwire's (`benches/support/mod.rs`) and the
//! peers' (`benches/krabka/`, `benches/peers/`), which read the same twelve frames.
#![allow(dead_code)]

macro_rules! frames {
    ($($dir:literal / $name:literal),* $(,)?) => {
        /// Every benchmarked frame, as hex text: the six seed frames, then the realistic ones.
        pub const FRAMES: &[(&str, &str)] = &[$(
            ($name, include_str!(concat!("../../tests/vectors/", $dir, "/", $name, ".hex"))),
        )*];
    };
}

frames!(
    "seed" / "apiversions_v4_request",
    "seed" / "apiversions_v4_response",
    "seed" / "listgroups_v5_request",
    "seed" / "listgroups_v5_response",
    "seed" / "listoffsets_v10_request",
    "seed" / "listoffsets_v10_response",
    "bench" / "apiversions_v4_response_90keys",
    "bench" / "listgroups_v2_response_1000",
    "bench" / "listgroups_v5_response_1000",
    "bench" / "listoffsets_v5_request_10x100",
    "bench" / "listoffsets_v10_request_10x100",
    "bench" / "listoffsets_v10_response_10x100",
);

/// The bytes of a frame's hex text (whitespace ignored).
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).expect("hex digit"))
        .collect()
}

//! Helpers shared by the integration tests, in one place: a test file says `mod common;`
//! and uses what it needs (each test binary uses part of them, hence `dead_code`).
//!
//! - this file: hex, the shared vectors of `tests/vectors`, [`XorShift`], [`root`];
//! - [`counting`]: a counting global allocator;
//! - [`process`]: a child process run to its end with a time limit;
//! - [`raw`]: a raw-frame connection to a broker, and the requests several suites make;
//! - [`tls`]: a test CA and a server certificate it signs (rcgen);
//! - [`clients`]: the real client programs, their installation and checks (`interop`);
//! - [`java`]: Kafka's own codec, the Java harness of `tests/java` (`interop`);
//! - `kwire_cmd`: the `kwire` command as a process (`cli` only);
//! - `proxy`: a running `kwire proxy` and the Kafka brokers of tests/kafka (`cli` only).
//!
//! The fuzz checks (`tests/fuzz_checks`) are shared with the fuzz crate and
//! `benches/support` with the benches, so those stay where they are.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[cfg(feature = "proxy")]
pub mod audit;
pub mod clients;
pub mod counting;
pub mod java;
#[cfg(feature = "cli")]
pub mod kwire_cmd;
pub mod newer_cluster;
pub mod process;
#[cfg(feature = "cli")]
pub mod proxy;
pub mod raw;
pub mod tls;

/// The repository's root (the crate's manifest folder).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Decodes lowercase or uppercase hex, ignoring whitespace.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).expect("hex digit"))
        .collect()
}

pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors")
}

/// A vector file (a whole frame as hex) relative to `tests/vectors`.
pub fn vector(rel: &str) -> Vec<u8> {
    let path = vectors_dir().join(rel);
    hex(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The `.hex` files of a folder of `tests/vectors`, sorted, as (stem, path relative to
/// `tests/vectors`).
pub fn hex_files(dir: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(vectors_dir().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".hex"))
        .map(|n| (n.trim_end_matches(".hex").to_string(), format!("{dir}/{n}")))
        .collect();
    out.sort();
    out
}

/// The frame after its 4-byte size prefix, checking that the prefix is right.
pub fn unframe(frame: &[u8]) -> &[u8] {
    let size = i32::from_be_bytes(frame[..4].try_into().unwrap());
    assert_eq!(size as usize, frame.len() - 4, "size prefix");
    &frame[4..]
}

/// A small seeded random stream for generated test values (xorshift64).
pub struct XorShift(pub u64);

impl XorShift {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Up to `max` random bytes.
    pub fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = (self.next() as usize) % max;
        (0..len).map(|_| self.next() as u8).collect()
    }
    /// Bytes that are valid UTF-8 throughout. `arbitrary` takes the valid prefix of the
    /// bytes for a string and leaves the first invalid byte in place, so with raw random
    /// bytes every string after the first in a struct tends to come out empty.
    pub fn text(&mut self, max: usize) -> Vec<u8> {
        let len = (self.next() as usize) % max;
        let mut out = Vec::with_capacity(len + 2);
        while out.len() < len {
            match self.next() % 16 {
                0 => out.extend_from_slice("é".as_bytes()),
                1 => out.extend_from_slice("€".as_bytes()),
                r => out.push((r as u8 * 8 + (self.next() as u8 % 8)) & 0x7f),
            }
        }
        out
    }
    /// Half the values from raw bytes, half from text.
    pub fn input(&mut self, max: usize) -> Vec<u8> {
        if self.next().is_multiple_of(2) { self.bytes(max) } else { self.text(max) }
    }
}

/// The API and version a vector's file name says (`listoffsets_v10_request_10x100`): the
/// name starts with the API in lower case, and `_vN_` gives the version.
pub fn api_and_version(name: &str) -> (kwire::ApiKey, i16) {
    let key = kwire::ApiKey::ALL
        .iter()
        .copied()
        .find(|k| name.starts_with(&k.name().to_ascii_lowercase()))
        .unwrap_or_else(|| panic!("{name}: no API in the name"));
    let version = name.split("_v").nth(1).and_then(|v| v.split('_').next()).and_then(|v| v.parse().ok());
    (key, version.unwrap_or_else(|| panic!("{name}: no version in the name")))
}

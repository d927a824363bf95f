//! `kwire decode`'s entry: it opens the input and hands a pcap or pcapng capture (by its
//! magic number) to `capture.rs`, frames to `decode.rs`. Both of those use `decode.rs`'s
//! arguments and printing; neither calls the other.

use crate::decode::Args;
use crate::{capture, decode, input};

/// Runs `kwire decode`.
pub fn run(args: Args) -> Result<(), String> {
    if args.compact && args.format != decode::Format::Json {
        return Err("--compact only applies to --format json".into());
    }
    let mut source = input::open(args.file.as_deref())?;
    let mut raw = Vec::new();
    let what = || args.file.as_ref().map_or("stdin".to_string(), |p| p.display().to_string());
    std::io::Read::read_to_end(&mut std::io::Read::take(&mut source, 4), &mut raw)
        .map_err(|e| format!("cannot read {}: {e}", what()))?;
    if kwire::capture::is_capture_magic(&raw) {
        return capture::run(
            &args,
            std::io::Read::chain(&raw[..], std::io::BufReader::with_capacity(1 << 20, source)),
        );
    }
    decode::run_frames(&args, source, raw)
}

//! `kwire decode`.

/// Decode frames and show every field with its offset and size.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_: Args) -> Result<(), String> {
    Err("not built yet".into())
}

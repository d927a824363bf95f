//! `kwire encode`.

/// Build a frame from JSON.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_: Args) -> Result<(), String> {
    Err("not built yet".into())
}

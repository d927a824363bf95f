//! `kwire versions`.

/// List the supported APIs and their versions.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_: Args) -> Result<(), String> {
    Err("not built yet".into())
}

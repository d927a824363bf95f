//! `kwire serve`.

/// Serve a Kafka-speaking broker front end from a catalogue.
#[derive(clap::Args)]
pub struct Args {}

pub fn run(_: Args) -> Result<(), String> {
    Err("not built yet".into())
}

//! `kwire`: inspect, explain and build Kafka frames, and serve a small Kafka-speaking
//! broker front end for development and tests.

mod capture;
mod decode;
mod decode_run;
mod encode;
mod input;
mod proxy;
mod serve;
mod versions;

use clap::{CommandFactory, Parser, Subcommand};

const AFTER_HELP: &str = "\
Examples:
  kwire decode frame.hex                      # every field of a request frame
  kwire decode --format json frame.hex | kwire encode   # round trip to the same hex
  kwire decode --request req.hex resp.hex     # a response, with the request it answers
  kwire decode kafka.pcapng                   # the Kafka traffic of a capture (pcap or pcapng)
  tcpdump -U -w - port 9092 | kwire decode -  # ...as it happens
  kwire versions                              # the APIs and versions kwire knows
  kwire proxy --listen 127.0.0.1:19092 --upstream 127.0.0.1:9092   # decode live traffic

Run `kwire help <command>` for each command's options and examples.";

/// Inspect, explain and build Apache Kafka wire-protocol frames.
#[derive(Parser)]
#[command(name = "kwire", version, about = "Inspect, explain and build Apache Kafka wire-protocol frames", long_about = None, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Decode(decode::Args),
    Encode(encode::Args),
    Versions(versions::Args),
    Serve(serve::Args),
    Proxy(proxy::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Decode(args) => decode_run::run(args),
        Command::Encode(args) => encode::run(args),
        Command::Versions(args) => versions::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "kwire", &mut std::io::stdout());
            Ok(())
        }
    };
    if let Err(message) = result {
        eprintln!("kwire: {message}");
        std::process::exit(1);
    }
}

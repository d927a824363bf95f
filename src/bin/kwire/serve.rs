//! `kwire serve`: a Kafka-speaking broker front end for development and tests.
//!
//! One thread per connection; requests on a connection are answered in order, so
//! pipelined requests work. A frame over the size limit, a malformed request, an unknown
//! API key or an unsupported version of anything but ApiVersions closes that connection
//! only, with a log line. Bytes after the end of a request body are ignored, as Apache
//! Kafka ignores them, with a log line.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use kwire::conn::{ConnError, FrameBuf, Received, ServerConn};
use kwire::frame::FrameError;
use kwire::messages::ApiKey;

use crate::broker::{Broker, Handler, Outcome};
use crate::catalog::Catalog;

/// Serve ApiVersions, Metadata, ListGroups and ListOffsets from a catalogue.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  kwire serve                                  # the built-in demo catalogue on 127.0.0.1:9092
  kwire serve --catalog cluster.toml --listen 127.0.0.1:0
  kwire serve --max-version ApiVersions=2      # make clients fall back to older versions
  kwire serve --print-demo-catalog > cluster.toml")]
pub struct Args {
    /// The catalogue of topics, offsets and groups (TOML, or JSON if the name ends in
    /// .json). Without it, a built-in demo catalogue.
    #[arg(long)]
    catalog: Option<String>,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:9092")]
    listen: String,
    /// The host:port clients should connect to, advertised in Metadata (default: the
    /// address listened on).
    #[arg(long)]
    advertise: Option<String>,
    /// Serve at most this version of an API, e.g. `ApiVersions=2` (repeatable).
    #[arg(long = "max-version", value_name = "API=VERSION")]
    max_versions: Vec<String>,
    /// Refuse frames larger than this many bytes (checked from the size prefix, before the
    /// frame is read).
    #[arg(long, default_value_t = 1 << 20)]
    max_frame_bytes: usize,
    /// Log every request, not only connections.
    #[arg(short, long)]
    verbose: bool,
    /// Print the built-in demo catalogue (an example of the format) and exit.
    #[arg(long)]
    print_demo_catalog: bool,
}

fn parse_limit(spec: &str) -> Result<(ApiKey, i16), String> {
    let (name, version) =
        spec.split_once('=').ok_or(format!("--max-version {spec}: expected API=VERSION"))?;
    let key = crate::broker::SERVED
        .iter()
        .chain(crate::broker::SASL)
        .copied()
        .find(|k| k.name().eq_ignore_ascii_case(name.trim()))
        .ok_or(format!("--max-version {spec}: unknown API {name:?} (see `kwire versions`)"))?;
    let version: i16 = version.trim().parse().map_err(|_| format!("--max-version {spec}: bad version"))?;
    if !key.request_versions().contains(version) {
        return Err(format!("--max-version {spec}: {} has versions {}", key.name(), key.request_versions()));
    }
    Ok((key, version))
}

pub fn run(args: Args) -> Result<(), String> {
    if args.print_demo_catalog {
        print!("{}", crate::catalog::DEMO.trim_start());
        return Ok(());
    }
    let catalog = match &args.catalog {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            Catalog::parse(&text, path)?
        }
        None => Catalog::demo(),
    };
    let limits = args.max_versions.iter().map(|s| parse_limit(s)).collect::<Result<Vec<_>, _>>()?;
    let listener =
        TcpListener::bind(&args.listen).map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let (host, port) = match &args.advertise {
        Some(a) => {
            let (h, p) = a.rsplit_once(':').ok_or(format!("--advertise {a}: expected HOST:PORT"))?;
            (h.to_string(), p.parse::<i32>().map_err(|_| format!("--advertise {a}: bad port"))?)
        }
        None => (local.ip().to_string(), i32::from(local.port())),
    };
    let broker = Broker::new(catalog, host.clone(), port, &limits)?;

    // Ctrl-C sets the flag and wakes the blocking accept below with a connection of its own.
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = stop.clone();
    ctrlc::set_handler(move || {
        handler_stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(local);
    })
    .map_err(|e| e.to_string())?;

    // The first line says where to connect; tests read it.
    println!("kwire serve: listening on {local}, advertising {host}:{port}");
    let _ = std::io::stdout().flush();
    for key in broker.served() {
        log(format_args!("serving {} versions {}", key.name(), broker.versions(*key)));
    }
    let open = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for conn in listener.incoming() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let stream = match conn {
                Ok(stream) => stream,
                Err(e) => {
                    log(format_args!("accept failed: {e}"));
                    continue;
                }
            };
            let peer = stream.peer_addr().map_or_else(|_| "unknown peer".to_string(), |a| a.to_string());
            let (verbose, max) = (args.verbose, args.max_frame_bytes);
            let (broker, stop, open) = (&broker, &stop, &open);
            open.fetch_add(1, Ordering::SeqCst);
            scope.spawn(move || {
                log(format_args!("{peer}: connected"));
                let why = serve_connection(stream, broker, stop, max, verbose, &peer);
                log(format_args!("{peer}: closed ({why})"));
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
        log(format_args!("shutting down; waiting for {} connections", open.load(Ordering::SeqCst)));
    });
    log(format_args!("stopped"));
    Ok(())
}

fn log(message: std::fmt::Arguments<'_>) {
    eprintln!("[kwire serve] {message}");
}

/// Serves one connection until the peer closes it, it misbehaves, or the server stops;
/// returns why it ended. The connection state is `kwire::conn::ServerConn` (frame buffer,
/// request parsing, the ApiVersions fallback); this is its I/O loop.
fn serve_connection(
    mut stream: TcpStream,
    broker: &Broker,
    stop: &AtomicBool,
    max_frame: usize,
    verbose: bool,
    peer: &str,
) -> String {
    // Short reads let the thread notice a shutdown.
    if let Err(e) = stream.set_read_timeout(Some(Duration::from_millis(200))) {
        return e.to_string();
    }
    let _ = stream.set_nodelay(true);
    let mut handler = Handler::new(broker);
    let mut conn = ServerConn::with_frame_buf(FrameBuf::new(max_frame));
    // Trailing bytes after a request body are logged once per connection (always when
    // verbose).
    let mut warned_trailing = false;
    // Answers to the frames of one read go out in one write: a client that pipelines gets
    // them together, and the server makes one system call instead of one per request.
    let mut pending: Vec<u8> = Vec::new();
    let flush = |stream: &mut TcpStream, pending: &mut Vec<u8>| {
        let result = stream.write_all(pending);
        pending.clear();
        result
    };
    loop {
        // Answer every complete frame already buffered, in order.
        loop {
            let (outcome, what) = if handler.expects_raw_sasl() {
                // After a SaslHandshake v0: a bare token, no Kafka header.
                match conn.frame_buf_mut().next_frame() {
                    Ok(Some(token)) => {
                        if verbose {
                            log(format_args!(
                                "{peer}: SASL token (v0 handshake): {} bytes, not shown",
                                token.len()
                            ));
                        }
                        (handler.raw_token(token), None)
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = flush(&mut stream, &mut pending);
                        return format!("refused: {e}");
                    }
                }
            } else {
                match conn.next_request() {
                    Ok(Some(received)) => {
                        let (key, version, size) = match received {
                            Received::Request(r) => {
                                (Some(r.body.api_key()), r.header.api_version(), r.frame.len())
                            }
                            Received::ApiVersionsUnsupported { header, .. } => {
                                (Some(ApiKey::ApiVersions), header.api_version, 0)
                            }
                            _ => (None, -1, 0),
                        };
                        (
                            handler.handle(received),
                            Some((key.map_or("unknown API", |k| k.name()), version, size)),
                        )
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = flush(&mut stream, &mut pending);
                        return match (conn.frame_buf().error(), e) {
                            (Some(_), e) => format!("refused: {e}"),
                            (
                                None,
                                ConnError::Frame(FrameError::UnsupportedVersion {
                                    api_key, api_version, ..
                                }),
                            ) => {
                                format!("{} v{api_version} is not supported", api_key.name())
                            }
                            (None, ConnError::Frame(FrameError::UnsupportedApiKey { api_key, .. })) => {
                                format!("unsupported API key {api_key}")
                            }
                            (None, e) => format!("malformed request: {e}"),
                        };
                    }
                }
            };
            match outcome {
                Outcome::Reply(n) => {
                    if let Some((api, version, size)) = what {
                        if verbose {
                            log(format_args!("{peer}: {api} v{version}: {} bytes in, {n} out", size + 4));
                        }
                        let ignored = handler.ignored_trailing_bytes();
                        if ignored > 0 && (verbose || !warned_trailing) {
                            log(format_args!(
                                "{peer}: {api} v{version}: ignored {ignored} bytes after the request body, \
                                 as Apache Kafka does"
                            ));
                            warned_trailing = true;
                        }
                    }
                    pending.extend_from_slice(&handler.output()[..n]);
                    if pending.len() >= 256 * 1024
                        && let Err(e) = flush(&mut stream, &mut pending)
                    {
                        return format!("write failed: {e}");
                    }
                }
                Outcome::Close(why) => {
                    let _ = flush(&mut stream, &mut pending);
                    return why;
                }
            }
        }
        if let Err(e) = flush(&mut stream, &mut pending) {
            return format!("write failed: {e}");
        }
        match stream.read(conn.spare()) {
            Ok(0) => return "peer closed the connection".into(),
            Ok(n) => conn.commit(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(Ordering::SeqCst) {
                    return "server shutting down".into();
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return format!("read failed: {e}"),
        }
    }
}

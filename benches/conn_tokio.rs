//! ApiVersions round trips on loopback through `kwire::conn`: a blocking broker (a thread
//! per connection, `ServerConn` over `std::net`) beside a tokio broker (`conn::tokio::
//! ServerCodec` on a two-worker runtime, and on a current-thread runtime: `tokio-ct`).
//! Requests per second and the broker's CPU time per request (not a test;
//! `cargo bench --features tokio --bench conn_tokio`).
//!
//! Each broker runs in a child process (this executable with `--serve blocking|tokio`), so
//! that its CPU time (utime + stime from /proc/PID/stat) is its own. The clients (threads
//! of this process) keep a window of ApiVersions v3 requests in flight per connection and
//! count the answers for a fixed time. The answer lists every API kwire knows (its size is
//! printed). Client and broker share the machine's cores.
//!
//! Environment: `KWIRE_BENCH_SECS` (seconds per run, default 3).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use kwire::ApiKey;
use kwire::conn::tokio::{ApiVersionsUnsupported, ServerCodec};
use kwire::conn::{FrameBuf, Received, ServerConn};
use kwire::dispatch;
use kwire::messages::api_versions::{ApiVersion, ApiVersionsRequest, ApiVersionsResponse};
use kwire::{List, Versions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder};

fn api_keys() -> Vec<ApiVersion<'static>> {
    ApiKey::ALL
        .iter()
        .map(|k| ApiVersion {
            api_key: k.to_i16(),
            min_version: k.request_versions().min,
            max_version: k.request_versions().max,
            ..Default::default()
        })
        .collect()
}

// ------------------------------------------------------------------ brokers

fn blocking_connection(mut socket: TcpStream, keys: &[ApiVersion<'_>]) {
    let mut conn = ServerConn::new();
    let mut out = Vec::with_capacity(64 * 1024);
    let body = ApiVersionsResponse { api_keys: List::Borrowed(keys), ..Default::default() };
    loop {
        let n = match socket.read(conn.spare()) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        conn.commit(n);
        loop {
            match conn.next_request() {
                Ok(Some(Received::Request(r))) => {
                    if ServerConn::encode_response(r.reply_to(), &body, &mut out).is_err() {
                        return;
                    }
                }
                Ok(Some(Received::ApiVersionsUnsupported { reply_to, .. })) => {
                    let v = ApiKey::ApiVersions.request_versions();
                    let _ = ServerConn::encode_api_versions_unsupported(reply_to, v, &mut out);
                }
                Ok(None) => break,
                Ok(Some(_)) | Err(_) => return,
            }
        }
        if !out.is_empty() {
            if socket.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
}

fn serve_blocking(listener: TcpListener) {
    let keys: &'static [ApiVersion<'static>] = Box::leak(api_keys().into_boxed_slice());
    for socket in listener.incoming().flatten() {
        let _ = socket.set_nodelay(true);
        thread::spawn(move || blocking_connection(socket, keys));
    }
}

async fn tokio_connection(mut socket: tokio::net::TcpStream, keys: Arc<Vec<ApiVersion<'static>>>) {
    let mut codec = ServerCodec::new();
    let mut input = BytesMut::with_capacity(16 * 1024);
    let mut output = BytesMut::with_capacity(64 * 1024);
    let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
    loop {
        loop {
            match codec.decode(&mut input) {
                Ok(Some(frame)) => match frame.received() {
                    Ok(Received::Request(r)) => {
                        if codec.encode((r.reply_to(), &body), &mut output).is_err() {
                            return;
                        }
                    }
                    Ok(Received::ApiVersionsUnsupported { reply_to, .. }) => {
                        let item = ApiVersionsUnsupported { reply_to, supported: Versions::new(0, 4) };
                        let _ = codec.encode(item, &mut output);
                    }
                    _ => return,
                },
                Ok(None) => break,
                Err(_) => return,
            }
        }
        if !output.is_empty() {
            if socket.write_all(&output).await.is_err() {
                return;
            }
            output.clear();
        }
        match socket.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

fn serve_tokio(listener: TcpListener, workers: usize) {
    let runtime = if workers == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().unwrap()
    };
    let keys = Arc::new(api_keys());
    runtime.block_on(async move {
        listener.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        loop {
            let Ok((socket, _)) = listener.accept().await else { continue };
            let _ = socket.set_nodelay(true);
            tokio::spawn(tokio_connection(socket, keys.clone()));
        }
    });
}

// ------------------------------------------------------------------ clients

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(mode: &str) -> Server {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--serve", mode])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").expect("the server's address").to_string();
    Server(child, addr)
}

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses): utime is the 14th field.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields[11].parse().unwrap();
    let stime: f64 = fields[12].parse().unwrap();
    // USER_HZ is 100 on Linux.
    (utime + stime) / 100.0
}

fn client(addr: &str, depth: usize, stop: &AtomicBool, answers: &AtomicU64) {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket.set_nodelay(true).unwrap();
    let mut request = vec![0u8; 64];
    let n =
        dispatch::encode_request(&ApiVersionsRequest::default(), 3, 1, Some("bench"), &mut request).unwrap();
    request.truncate(n);
    let window: Vec<u8> = request.iter().copied().cycle().take(n * depth).collect();
    socket.write_all(&window).unwrap();
    let mut frames = FrameBuf::new(1 << 20);
    let mut done = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let got = socket.read(frames.spare()).unwrap();
        if got == 0 {
            break;
        }
        frames.commit(got);
        let mut answered = 0;
        while let Some(_frame) = frames.next_frame().unwrap() {
            answered += 1;
        }
        done += answered as u64;
        for _ in 0..answered {
            socket.write_all(&request).unwrap();
        }
    }
    answers.fetch_add(done, Ordering::Relaxed);
}

fn run(mode: &str, connections: usize, depth: usize, secs: u64) -> (f64, f64) {
    let server = start(mode);
    let pid = server.0.id();
    // Warm up one connection.
    let warm = AtomicBool::new(false);
    let stop_warm = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| client(&server.1, 1, &warm, &stop_warm));
        thread::sleep(Duration::from_millis(200));
        warm.store(true, Ordering::Relaxed);
    });
    let stop = AtomicBool::new(false);
    let answers = AtomicU64::new(0);
    let cpu_before = cpu_seconds(pid);
    let start = Instant::now();
    thread::scope(|s| {
        for _ in 0..connections {
            s.spawn(|| client(&server.1, depth, &stop, &answers));
        }
        thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds(pid) - cpu_before;
    let n = answers.load(Ordering::Relaxed) as f64;
    (n / elapsed, cpu / n * 1e6)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        println!("listening on {}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        match args.get(i + 1).map(String::as_str) {
            Some("tokio") => serve_tokio(listener, 2),
            Some("tokio-ct") => serve_tokio(listener, 1),
            _ => serve_blocking(listener),
        }
        return;
    }
    let secs = std::env::var("KWIRE_BENCH_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    let keys = api_keys();
    let body = ApiVersionsResponse { api_keys: List::Borrowed(&keys), ..Default::default() };
    let size = dispatch::response_len(&body, 3).unwrap();
    println!(
        "ApiVersions v3 round trips on loopback, {secs} s per run (answer: {} keys, {size} bytes)",
        keys.len()
    );
    println!(
        "{:<9} {:>5} {:>6} {:>12} {:>16}",
        "broker", "conns", "depth", "requests/s", "broker CPU us/req"
    );
    for (connections, depth) in [(1, 1), (4, 1), (4, 32), (16, 8)] {
        for mode in ["blocking", "tokio", "tokio-ct"] {
            let (rate, cpu) = run(mode, connections, depth, secs);
            println!("{mode:<9} {connections:>5} {depth:>6} {rate:>12.0} {cpu:>16.2}");
        }
    }
}

//! [`super::Proxy::serve_metrics`]: the proxy's metrics over HTTP, in the Prometheus text
//! format, for a scraper.

use std::format;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::string::String;
use std::time::Duration;

/// Serves `GET /metrics` (any path) on `listener`, one scrape at a time, each bounded to
/// 8 KiB of request and 2 s.
pub(crate) fn serve(listener: TcpListener, render: impl Fn() -> String) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut req = [0u8; 8192];
        let mut n = 0;
        while n < req.len() {
            match stream.read(&mut req[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
            if req[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let body = render();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes()));
    }
}

//! Dialling a broker: the one TCP connect of the proxy, with its time limit.

#[allow(unused_imports)]
use std::{string::String, string::ToString};

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

/// Connects to `upstream`, or to the first of a comma-separated list that answers (the
/// bootstrap listener's `--upstream`), with the one it reached.
pub(super) async fn connect(upstream: &str) -> std::io::Result<(TcpStream, String)> {
    let mut last = std::io::Error::new(ErrorKind::InvalidInput, "no address");
    for one in upstream.split(',') {
        let connecting = async {
            match one.parse::<SocketAddr>() {
                Ok(addr) => TcpStream::connect(addr).await,
                Err(_) => TcpStream::connect(one).await,
            }
        };
        match tokio::time::timeout(Duration::from_secs(10), connecting).await {
            Ok(Ok(s)) => return Ok((s, one.to_string())),
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::Error::new(ErrorKind::TimedOut, "timed out"),
        }
    }
    Err(last)
}

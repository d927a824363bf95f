//! A relay that stands in for a Kafka cluster newer than kwire: its ApiVersions answers
//! list Metadata one version past kwire's and an API kwire does not know (key 999). Shared
//! by tests/proxy_lib.rs and tests/proxy.rs (ApiVersions clamping).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

use kwire::messages::ApiVersionsResponse;
use kwire::messages::ResponseBodyView;
use kwire::messages::api_versions::ApiVersion;
use kwire::{ApiKey, List, dispatch};

/// The next frame (without its size prefix).
fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame)?;
    Ok(frame)
}

/// Listens on a free port and relays each connection to `upstream`, widening its
/// ApiVersions answers.
pub fn widening_relay(upstream: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(upstream) else { return };
            let asked: Arc<Mutex<Vec<(i32, i16)>>> = Arc::default();
            let (mut c2, mut s2, asked2) =
                (client.try_clone().unwrap(), server.try_clone().unwrap(), asked.clone());
            thread::spawn(move || {
                while let Ok(frame) = read_frame(&mut c2) {
                    if let Ok(h) = kwire::frame::RequestHeaderView::peek(&frame)
                        && h.api_key == ApiKey::ApiVersions.to_i16()
                    {
                        asked2.lock().unwrap().push((h.correlation_id, h.api_version));
                    }
                    let _ = s2.write_all(&(frame.len() as u32).to_be_bytes());
                    if s2.write_all(&frame).is_err() {
                        return;
                    }
                }
                let _ = s2.shutdown(std::net::Shutdown::Both);
            });
            thread::spawn(move || {
                while let Ok(mut frame) = read_frame(&mut server) {
                    let id = i32::from_be_bytes(frame[..4].try_into().unwrap());
                    let version = asked.lock().unwrap().iter().find(|(c, _)| *c == id).map(|(_, v)| *v);
                    if let Some(version) = version {
                        frame = widen(&frame, version);
                    }
                    let _ = client.write_all(&(frame.len() as u32).to_be_bytes());
                    if client.write_all(&frame).is_err() {
                        return;
                    }
                }
                let _ = client.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    addr
}

fn widen(frame: &[u8], version: i16) -> Vec<u8> {
    let (response, read_at) = kwire::conn::read_response(frame, ApiKey::ApiVersions, version).unwrap();
    let ResponseBodyView::ApiVersions(v) = response.body else { panic!() };
    let mut body = ApiVersionsResponse::from(v);
    let metadata_max = ApiKey::Metadata.request_versions().max;
    let mut keys: Vec<ApiVersion<'_>> = body
        .api_keys
        .iter()
        .map(|k| {
            let mut k = k.clone();
            if k.api_key == ApiKey::Metadata.to_i16() {
                k.max_version = metadata_max + 1;
            }
            k
        })
        .collect();
    keys.push(ApiVersion { api_key: 999, min_version: 0, max_version: 2, ..Default::default() });
    body.api_keys = List::Owned(keys);
    let mut out = vec![0u8; dispatch::response_len(&body, read_at).unwrap()];
    dispatch::encode_response(&body, read_at, response.header.correlation_id(), &mut out).unwrap();
    out.drain(..4);
    out
}

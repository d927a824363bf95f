//! Large frames through `kwire::proxy` with a filter, for callgrind or perf: what the proxy
//! copies of a Produce request or a Fetch answer of about 1 MB (1 KB records) that a filter
//! reads (the docs' example filter) or renames (a tenant). Not a criterion bench: a program
//! to run under a profiler, with an upstream in a thread of its own that answers every
//! Produce request with a small answer and every Fetch request with the same large answer.
//!
//!   proxy_copies FILTER WHAT ROUNDS
//!
//! FILTER: `none`, `audit` (the docs' example filter), `tenant` (the proxy's tenants, which
//! borrow tails) or `tenant-copying` (a `filter::Tenant` that copies renamed frames whole);
//! WHAT: `produce` or `fetch`. For example:
//!
//!   valgrind --tool=callgrind proxy_copies tenant fetch 20

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use kwire::filter::{FilterChain, Tenant};
use kwire::messages::fetch::{FetchPartition, FetchTopic, FetchableTopicResponse, PartitionData};
use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
use kwire::messages::{FetchRequest, FetchResponse, ProduceRequest, ProduceResponse};
use kwire::proxy::{ConnInfo, Proxy};
use kwire::records::{BatchBuilder, NewRecord};

#[path = "../tests/common/audit.rs"]
mod audit;

const PRODUCE: i16 = 9;
const FETCH: i16 = 12;

/// A batch of 1000 records of 1 KB.
fn batch() -> Vec<u8> {
    let values: Vec<Vec<u8>> = (0..1000).map(|i| vec![b'a' + (i % 26) as u8; 1000]).collect();
    let new: Vec<NewRecord<'_>> = values
        .iter()
        .map(|v| NewRecord { key: None, value: Some(v), headers: &[], timestamp: None })
        .collect();
    let mut out = Vec::new();
    BatchBuilder::new(0, 1_700_000_000_000, &new).encode_to_vec(&mut out).unwrap();
    out
}

fn request(body: &impl kwire::AnyBody, version: i16) -> Vec<u8> {
    let header =
        kwire::frame::RequestHeader { correlation_id: 0, client_id: Some("copies"), ..Default::default() };
    let mut out = vec![0u8; kwire::dispatch::request_len(body, version, &header).unwrap()];
    kwire::dispatch::encode_request(body, version, 0, Some("copies"), &mut out).unwrap();
    out
}

fn response(body: &impl kwire::AnyBody, version: i16) -> Vec<u8> {
    let mut out = vec![0u8; kwire::dispatch::response_len(body, version).unwrap()];
    kwire::dispatch::encode_response(body, version, 0, &mut out).unwrap();
    out
}

fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame)?;
    Ok(frame)
}

/// Answers Produce with a small answer and Fetch with `fetched`, correlation ids set.
fn upstream(listener: TcpListener, produced: Vec<u8>, fetched: Vec<u8>) {
    while let Ok((mut s, _)) = listener.accept() {
        let (produced, fetched) = (produced.clone(), fetched.clone());
        std::thread::spawn(move || {
            while let Ok(frame) = read_frame(&mut s) {
                let mut answer = if frame[1] == 0 { produced.clone() } else { fetched.clone() };
                answer[4..8].copy_from_slice(&frame[4..8]);
                if s.write_all(&answer).is_err() {
                    return;
                }
            }
        });
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(filter), Some(what), Some(rounds)) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: proxy_copies none|audit|tenant|tenant-copying produce|fetch ROUNDS");
        std::process::exit(2);
    };
    let rounds: i32 = rounds.parse().expect("ROUNDS");
    let records = batch();
    let names = ["tenant-a.orders"];
    let fetched = {
        let partitions =
            [PartitionData { high_watermark: 1000, records: Some(records[..].into()), ..Default::default() }];
        let topics: Vec<FetchableTopicResponse<'_>> = names
            .iter()
            .map(|n| FetchableTopicResponse {
                topic: (*n).into(),
                partitions: partitions[..].into(),
                ..Default::default()
            })
            .collect();
        response(&FetchResponse { responses: topics[..].into(), ..Default::default() }, FETCH)
    };
    let produced = response(&ProduceResponse::default(), PRODUCE);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = listener.local_addr().unwrap();
    std::thread::spawn(move || upstream(listener, produced, fetched));

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut tenants = kwire::proxy::Tenants::new();
    tenants.default_tenant("tenant-a.").unwrap();
    let tenants = Arc::new(tenants);
    let builder = Proxy::builder("127.0.0.1:0".parse().unwrap(), [up.to_string()]);
    let builder = match filter.as_str() {
        "none" => builder,
        "audit" => builder.filters(|conn: &Arc<ConnInfo>| {
            let mut chain = FilterChain::new();
            chain.push(audit::AuditTopics(conn.clone()));
            chain
        }),
        "tenant" => builder.filters(move |conn: &Arc<ConnInfo>| {
            let mut chain = FilterChain::new();
            chain.push(tenants.filter(conn));
            chain
        }),
        "tenant-copying" => builder.filters(|_: &Arc<ConnInfo>| {
            let mut chain = FilterChain::new();
            chain.push(Tenant::new("tenant-a."));
            chain
        }),
        other => panic!("unknown filter {other}"),
    };
    let proxy = runtime.block_on(builder.start()).unwrap();

    let partitions =
        [PartitionProduceData { index: 0, records: Some(records[..].into()), ..Default::default() }];
    let topics = [TopicProduceData {
        name: "orders".into(),
        partition_data: partitions[..].into(),
        ..Default::default()
    }];
    let produce =
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: topics[..].into(), ..Default::default() };
    let fetch_partitions = [FetchPartition { partition: 0, ..Default::default() }];
    let fetch_topics = [FetchTopic {
        topic: "orders".into(),
        partitions: fetch_partitions[..].into(),
        ..Default::default()
    }];
    let fetch = FetchRequest { max_wait_ms: 0, topics: fetch_topics[..].into(), ..Default::default() };
    let mut frame = match what.as_str() {
        "produce" => request(&produce, PRODUCE),
        "fetch" => request(&fetch, FETCH),
        other => panic!("unknown frame {other}"),
    };
    let mut client = TcpStream::connect(proxy.local_addr()).unwrap();
    let mut got = 0usize;
    for i in 0..rounds {
        frame[8..12].copy_from_slice(&i.to_be_bytes());
        client.write_all(&frame).unwrap();
        let answer = read_frame(&mut client).unwrap();
        assert_eq!(answer[..4], i.to_be_bytes());
        got += answer.len();
    }
    let moved = if what == "produce" { frame.len() * rounds as usize } else { got };
    println!("{filter} {what}: {rounds} rounds, {moved} bytes of {what} through the proxy");
}

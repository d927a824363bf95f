//! Record encryption through `kwire::proxy` (feature `encrypt`), against the in-process
//! broker with `kwire::client`: what the broker stores (never a plaintext value), what a
//! client gets through the proxy (exactly the plaintext, in order) and straight from the
//! broker (only envelopes), every codec, rotation, a KMS outage, tampered and moved
//! records under both policies, two proxies and a restart, and what the proxy's hooks see.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::ErrorCode;
use kwire::client::{Client, Config, Record};
use kwire::proxy::encrypt::{EncryptRule, Encryption, KeyPolicy, MemoryKms, UNDECRYPTED_KEY, format};
use kwire::proxy::{ConnInfo, Hooks, Pairing, Proxy, RequestHead};
use kwire::records::{Compression, NewHeader, NewRecord};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn kms() -> Arc<MemoryKms> {
    let kms = MemoryKms::new();
    kms.create_key("kek-a");
    kms.create_key("kek-b");
    Arc::new(kms)
}

/// The rules every test uses: `secret.*` values under kek-a, `full.*` values and headers
/// under kek-b, `soft.*` passed as stored when they cannot be decrypted.
fn encryption(kms: &Arc<MemoryKms>, policy: KeyPolicy) -> Encryption {
    Encryption::new(kms.clone())
        .rule(EncryptRule::new("secret.*", "kek-a").unwrap())
        .rule(EncryptRule::new("full.*", "kek-b").unwrap().with_headers(true))
        .rule("soft.*=kek-a,on-failure=pass".parse().unwrap())
        .key_policy(policy)
}

fn start(rt: &tokio::runtime::Runtime, broker: &kwire::broker::Broker, e: Encryption) -> Proxy {
    rt.block_on(Proxy::builder(any_port(), [broker.addr().to_string()]).encrypt(e).start()).unwrap()
}

fn client(addr: SocketAddr, compression: Compression) -> Client {
    let config = Config { compression, timeout: Duration::from_secs(10), ..Config::default() };
    Client::connect_with(addr, config).unwrap()
}

/// Every record of a partition, fetched from offset 0 to the end.
fn fetch_all(c: &mut Client, topic: &str) -> Result<Vec<Record>, kwire::client::Error> {
    Ok(c.fetch_to_end(topic, 0, 0)?.records)
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Checks that no stored record of `topic` holds any of `secrets` in its value or headers
/// (decompressed: the broker's own reading of its log), and that every non-null value is
/// an envelope.
fn assert_stored_encrypted(broker: &kwire::broker::Broker, topic: &str, secrets: &[Vec<u8>]) -> usize {
    let stored = broker.records(topic, 0).unwrap();
    for r in &stored {
        let mut bytes = r.value.clone().unwrap_or_default();
        for h in &r.headers {
            bytes.extend_from_slice(&h.key);
            bytes.extend_from_slice(h.value.as_deref().unwrap_or_default());
        }
        for s in secrets {
            assert!(!contains(&bytes, s), "{topic}: plaintext {:?} stored", String::from_utf8_lossy(s));
        }
        if let Some(v) = &r.value {
            assert!(format::is_envelope(v), "{topic}: a stored value that is not an envelope");
        }
    }
    stored.len()
}

/// Values unique to a test, unlike any key.
fn value(topic: &str, i: usize) -> Vec<u8> {
    format!("plaintext-{topic}-{i}-{}", "confidential ".repeat(i % 7)).into_bytes()
}

/// A record as sent: key, value, headers.
type Sent = (Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>);

#[test]
fn every_codec_round_trips_and_the_broker_holds_only_envelopes() {
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let proxy = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    let codecs =
        [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];
    for codec in codecs {
        for prefix in ["secret", "full"] {
            let topic = format!("{prefix}.{codec:?}").to_lowercase();
            broker.create_topic(&topic, 1);
            let mut through = client(proxy.local_addr(), codec);
            let mut sent: Vec<Sent> = Vec::new();
            for batch in 0..3 {
                let values: Vec<Vec<u8>> = (0..4).map(|i| value(&topic, batch * 4 + i)).collect();
                let keys: Vec<Vec<u8>> = (0..4).map(|i| format!("k{batch}{i}").into_bytes()).collect();
                let header_value = format!("hdr-secret-{topic}-{batch}").into_bytes();
                let headers = [
                    NewHeader { key: b"trace", value: Some(&header_value) },
                    NewHeader { key: b"nil", value: None },
                ];
                let mut records: Vec<NewRecord<'_>> = (0..4)
                    .map(|i| NewRecord::new(Some(&keys[i]), Some(&values[i])).with_headers(&headers))
                    .collect();
                // A tombstone with headers, and an empty value.
                records[1].value = None;
                records[2].value = Some(b"");
                through.produce(&topic, 0, &records).unwrap();
                for r in &records {
                    let hs =
                        r.headers.iter().map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec))).collect();
                    sent.push((r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), hs));
                }
            }
            // Through the proxy: exactly what was sent, in order, at offsets 0, 1, ...
            let got = fetch_all(&mut through, &topic).unwrap();
            assert_eq!(got.len(), sent.len(), "{topic}");
            for (i, (r, (k, v, hs))) in got.iter().zip(&sent).enumerate() {
                assert_eq!(r.offset, i as i64, "{topic}");
                assert_eq!((&r.key, &r.value), (k, v), "{topic} record {i}");
                let got_headers: Vec<(Vec<u8>, Option<Vec<u8>>)> =
                    r.headers.iter().map(|h| (h.key.clone(), h.value.clone())).collect();
                assert_eq!(&got_headers, hs, "{topic} record {i} headers");
            }
            // The broker holds no plaintext value (nor, with headers encrypted, header).
            let mut secrets: Vec<Vec<u8>> =
                sent.iter().filter_map(|(_, v, _)| v.clone()).filter(|v| !v.is_empty()).collect();
            if prefix == "full" {
                secrets.extend((0..3).map(|b| format!("hdr-secret-{topic}-{b}").into_bytes()));
                secrets.push(b"trace".to_vec());
            }
            assert_eq!(assert_stored_encrypted(&broker, &topic, &secrets), sent.len());
            // Straight at the broker: envelopes (and the tombstones, still null).
            let mut direct = client(broker.addr(), Compression::None);
            let raw = fetch_all(&mut direct, &topic).unwrap();
            assert_eq!(raw.len(), sent.len());
            for (r, (k, v, _)) in raw.iter().zip(&sent) {
                assert_eq!(&r.key, k, "keys stay as they were");
                match v {
                    None => assert_eq!(r.value, None, "a tombstone stays one"),
                    Some(_) => assert!(format::is_envelope(r.value.as_deref().unwrap())),
                }
                if prefix == "full" {
                    // Encrypted headers: none left but, for a tombstone, the envelope's.
                    let keys: Vec<&[u8]> = r.headers.iter().map(|h| &h.key[..]).collect();
                    let want: Vec<&[u8]> =
                        if v.is_none() { vec![format::HEADERS_KEY.as_bytes()] } else { vec![] };
                    assert_eq!(keys, want);
                }
            }
        }
    }
    // A topic without a rule passes unchanged, both ways.
    broker.create_topic("plain", 1);
    let mut through = client(proxy.local_addr(), Compression::Gzip);
    through.produce("plain", 0, &[NewRecord::new(None, Some(b"open"))]).unwrap();
    assert_eq!(broker.records("plain", 0).unwrap()[0].value.as_deref(), Some(&b"open"[..]));
    assert_eq!(fetch_all(&mut through, "plain").unwrap()[0].value.as_deref(), Some(&b"open"[..]));
    rt.block_on(proxy.shutdown_within(Duration::from_secs(2)));
}

#[test]
fn data_keys_rotate_mid_stream_and_every_record_stays_readable() {
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let policy = KeyPolicy { max_records: 3, ..KeyPolicy::default() };
    let proxy = start(&rt, &broker, encryption(&kms, policy));
    broker.create_topic("secret.rotate", 1);
    let mut c = client(proxy.local_addr(), Compression::Zstd);
    let mut sent = Vec::new();
    for i in 0..10 {
        let v = value("rotate", i);
        c.produce("secret.rotate", 0, &[NewRecord::new(None, Some(&v))]).unwrap();
        sent.push(v);
    }
    // A batch larger than the bound gets a key of its own.
    let big: Vec<Vec<u8>> = (10..15).map(|i| value("rotate", i)).collect();
    let records: Vec<NewRecord<'_>> = big.iter().map(|v| NewRecord::new(None, Some(v))).collect();
    c.produce("secret.rotate", 0, &records).unwrap();
    sent.extend(big);
    assert_stored_encrypted(&broker, "secret.rotate", &sent);
    let mut wrapped = std::collections::BTreeSet::new();
    for r in broker.records("secret.rotate", 0).unwrap() {
        let v = r.value.unwrap();
        wrapped.insert(format::Envelope::parse(&v).unwrap().wrapped.to_vec());
    }
    // Ten single records at three a key, then one batch of five: five keys.
    assert_eq!(wrapped.len(), 5, "data keys used");
    let got: Vec<Vec<u8>> =
        fetch_all(&mut c, "secret.rotate").unwrap().into_iter().map(|r| r.value.unwrap()).collect();
    assert_eq!(got, sent);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(2)));
}

#[test]
fn a_kms_outage_refuses_produce_retriably_stores_nothing_and_recovers() {
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let proxy = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    broker.create_topic("secret.outage", 1);
    broker.create_topic("plain.outage", 1);
    let mut c = client(proxy.local_addr(), Compression::Lz4);
    kms.set_down(true);
    let v = value("outage", 1);
    let err = c.produce("secret.outage", 0, &[NewRecord::new(None, Some(&v))]).unwrap_err();
    assert_eq!(err.error_code(), Some(ErrorCode::KafkaStorageError), "{err}");
    assert!(err.error_code().unwrap().is_retriable());
    assert_eq!(broker.end_offset("secret.outage", 0), Some(0), "nothing stored");
    assert!(broker.records("secret.outage", 0).unwrap().is_empty());
    // Topics without a rule are not held up.
    c.produce("plain.outage", 0, &[NewRecord::new(None, Some(b"fine"))]).unwrap();
    // The connection is still usable, and the same producer succeeds once the KMS is back.
    kms.set_down(false);
    c.produce("secret.outage", 0, &[NewRecord::new(None, Some(&v))]).unwrap();
    assert_stored_encrypted(&broker, "secret.outage", std::slice::from_ref(&v));
    // A proxy that has not seen the data key cannot read it while the KMS is down:
    // a retriable error, not ciphertext; the first proxy still can (its cache).
    let second = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    kms.set_down(true);
    let mut other = client(second.local_addr(), Compression::None);
    let err = fetch_all(&mut other, "secret.outage").unwrap_err();
    assert_eq!(err.error_code(), Some(ErrorCode::KafkaStorageError), "{err}");
    assert_eq!(fetch_all(&mut c, "secret.outage").unwrap()[0].value.as_deref(), Some(&v[..]));
    kms.set_down(false);
    let mut other = client(second.local_addr(), Compression::None);
    assert_eq!(fetch_all(&mut other, "secret.outage").unwrap()[0].value.as_deref(), Some(&v[..]));
    rt.block_on(proxy.shutdown_within(Duration::from_secs(2)));
    rt.block_on(second.shutdown_within(Duration::from_secs(2)));
}

/// A stored value with one byte of its ciphertext flipped.
fn flipped(v: &[u8]) -> Vec<u8> {
    let mut v = v.to_vec();
    let last = v.len() - 1;
    v[last - 20] ^= 0x40;
    v
}

#[test]
fn tampered_moved_and_unencrypted_records_follow_the_rules_policy() {
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let proxy = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    let mut c = client(proxy.local_addr(), Compression::None);
    for topic in ["secret.tamper", "soft.tamper", "secret.other"] {
        broker.create_topic(topic, 1);
        c.produce(topic, 0, &[NewRecord::new(Some(b"k"), Some(b"good-value"))]).unwrap();
    }
    let stored = |t: &str| broker.records(t, 0).unwrap()[0].value.clone().unwrap();
    let (tamper, soft, other) = (stored("secret.tamper"), stored("soft.tamper"), stored("secret.other"));
    // Written straight to the broker, behind the proxy's back: a flipped byte, an envelope
    // moved from another topic, one under another key, and a plaintext value.
    for (topic, own) in [("secret.tamper", &tamper), ("soft.tamper", &soft)] {
        let bad = [flipped(own), other.clone(), own.clone(), b"written-in-the-clear".to_vec()];
        let keys: [&[u8]; 4] = [b"k", b"k", b"another-key", b"k"];
        let records: Vec<NewRecord<'_>> =
            bad.iter().zip(keys).map(|(v, k)| NewRecord::new(Some(k), Some(v))).collect();
        broker.append(topic, 0, &records).unwrap();
    }
    // Policy error: the partition is an error (CORRUPT_MESSAGE), no record shown.
    let err = fetch_all(&mut c, "secret.tamper").unwrap_err();
    assert_eq!(err.error_code(), Some(ErrorCode::CorruptMessage), "{err}");
    // Policy pass: the good record decrypted, every bad one as stored and marked.
    let got = fetch_all(&mut c, "soft.tamper").unwrap();
    assert_eq!(got.len(), 5);
    assert_eq!(got[0].value.as_deref(), Some(&b"good-value"[..]));
    assert!(got[0].headers.is_empty());
    let raw = broker.records("soft.tamper", 0).unwrap();
    for (r, stored) in got[1..].iter().zip(&raw[1..]) {
        assert_eq!(r.value, stored.value, "passed as stored");
        assert_eq!(r.headers.len(), 1, "marked");
        assert_eq!(r.headers[0].key, UNDECRYPTED_KEY.as_bytes());
        assert!(!r.headers[0].value.as_deref().unwrap().is_empty());
    }
    // The untouched topic still reads.
    assert_eq!(fetch_all(&mut c, "secret.other").unwrap()[0].value.as_deref(), Some(&b"good-value"[..]));
    rt.block_on(proxy.shutdown_within(Duration::from_secs(2)));
}

#[test]
fn two_proxies_and_a_restart_read_each_others_records() {
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let a = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    let b = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    broker.create_topic("secret.shared", 1);
    broker.create_topic("full.shared", 1);
    let (mut ca, mut cb) =
        (client(a.local_addr(), Compression::Snappy), client(b.local_addr(), Compression::Gzip));
    let h = [NewHeader { key: b"h", value: Some(b"header-secret") }];
    for topic in ["secret.shared", "full.shared"] {
        ca.produce(topic, 0, &[NewRecord::new(None, Some(b"from-a")).with_headers(&h)]).unwrap();
        cb.produce(topic, 0, &[NewRecord::new(None, Some(b"from-b")).with_headers(&h)]).unwrap();
        for c in [&mut ca, &mut cb] {
            let got = fetch_all(c, topic).unwrap();
            let values: Vec<&[u8]> = got.iter().map(|r| r.value.as_deref().unwrap()).collect();
            assert_eq!(values, [&b"from-a"[..], b"from-b"]);
            assert!(got.iter().all(
                |r| r.headers.len() == 1 && r.headers[0].value.as_deref() == Some(&b"header-secret"[..])
            ));
        }
    }
    // A restart: a new proxy (no cache, new data keys) reads the old records.
    rt.block_on(a.shutdown_within(Duration::from_secs(2)));
    let again = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    let mut c = client(again.local_addr(), Compression::None);
    let values: Vec<Vec<u8>> =
        fetch_all(&mut c, "full.shared").unwrap().into_iter().map(|r| r.value.unwrap()).collect();
    assert_eq!(values, [b"from-a".to_vec(), b"from-b".to_vec()]);
    // Another KMS (the KEK lost): nothing reads, and nothing shows as plaintext.
    let lost = MemoryKms::new();
    lost.create_key("kek-a");
    lost.create_key("kek-b");
    let stranger = start(&rt, &broker, encryption(&Arc::new(lost), KeyPolicy::default()));
    let mut c = client(stranger.local_addr(), Compression::None);
    let err = fetch_all(&mut c, "secret.shared").unwrap_err();
    assert_eq!(err.error_code(), Some(ErrorCode::CorruptMessage), "{err}");
    for p in [b, again, stranger] {
        rt.block_on(p.shutdown_within(Duration::from_secs(2)));
    }
}

/// Hooks that keep every frame they are told of.
#[derive(Default)]
struct Frames(Mutex<Vec<Vec<u8>>>);

impl Hooks for Frames {
    type Tag = ();
    fn admit(&self, _: &ConnInfo, _: &RequestHead, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
    fn request(&self, _: &ConnInfo, frame: &[u8], _: &RequestHead, _: &()) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
    fn response(&self, _: &ConnInfo, frame: &[u8], _: Pairing<()>, _: bool, _: Duration) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

#[test]
fn the_hooks_never_see_plaintext_of_a_ruled_topic() {
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let proxy = rt
        .block_on(
            Proxy::builder(any_port(), [broker.addr().to_string()])
                .encrypt(encryption(&kms, KeyPolicy::default()))
                .hooks(Frames::default())
                .start(),
        )
        .unwrap();
    broker.create_topic("secret.hooks", 1);
    let mut c = client(proxy.local_addr(), Compression::None);
    let v = b"never-in-a-recording".to_vec();
    c.produce("secret.hooks", 0, &[NewRecord::new(None, Some(&v))]).unwrap();
    assert_eq!(fetch_all(&mut c, "secret.hooks").unwrap()[0].value.as_deref(), Some(&v[..]));
    let frames = proxy.hooks().0.lock().unwrap();
    assert!(frames.len() >= 4, "the hooks saw the exchanges");
    assert!(frames.iter().all(|f| !contains(f, &v)), "plaintext in a frame the hooks saw");
    drop(frames);
    rt.block_on(proxy.shutdown_within(Duration::from_secs(2)));
}

/// Sends `body` at `version` on `s` and reads the answer's frame.
fn call(s: &mut std::net::TcpStream, body: &impl kwire::AnyBody, version: i16) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut buf = vec![0u8; 1 << 16];
    let n = kwire::dispatch::encode_request(body, version, 7, Some("encrypt-test"), &mut buf).unwrap();
    s.write_all(&buf[..n]).unwrap();
    let mut size = [0u8; 4];
    s.read_exact(&mut size).unwrap();
    let mut frame = vec![0u8; u32::from_be_bytes(size) as usize];
    s.read_exact(&mut frame).unwrap();
    frame
}

/// Produce v13 names topics by id only: the proxy names the id (asking the broker) and
/// encrypts; an id it cannot name is refused with its own message, nothing forwarded.
#[test]
fn produce_by_topic_id_is_encrypted_and_an_unknown_id_refused() {
    use kwire::messages::produce::{PartitionProduceData, TopicProduceData};
    use kwire::messages::{MetadataRequest, ProduceRequest, ResponseBodyView};
    use kwire::types::Uuid;
    let rt = runtime();
    let broker = kwire::broker::Broker::start(Default::default()).unwrap();
    let kms = kms();
    let proxy = start(&rt, &broker, encryption(&kms, KeyPolicy::default()));
    broker.create_topic("secret.ids", 1);
    // The id, from the broker itself (the proxy's book has not seen it).
    let mut direct = std::net::TcpStream::connect(broker.addr()).unwrap();
    let answer = call(&mut direct, &MetadataRequest { topics: None, ..Default::default() }, 12);
    let (response, _) = kwire::conn::read_response(&answer, kwire::ApiKey::Metadata, 12).unwrap();
    let ResponseBodyView::Metadata(m) = response.body else { panic!() };
    let id = m.topics().iter().find(|t| t.name() == Some("secret.ids")).unwrap().topic_id();
    assert_ne!(id, Uuid::ZERO);
    let secret = b"by-id-plaintext".to_vec();
    let mut batch = Vec::new();
    kwire::records::BatchBuilder::new(0, 1_700_000_000_000, &[NewRecord::new(None, Some(&secret))])
        .encode_to_vec(&mut batch)
        .unwrap();
    let produce = |topic_id: Uuid| {
        let partitions = vec![PartitionProduceData {
            index: 0,
            records: Some(batch.clone().into()),
            ..Default::default()
        }];
        let topics =
            vec![TopicProduceData { topic_id, partition_data: partitions.into(), ..Default::default() }];
        ProduceRequest { acks: -1, timeout_ms: 5000, topic_data: topics.into(), ..Default::default() }
    };
    let mut s = std::net::TcpStream::connect(proxy.local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let unknown = Uuid([9; 16]);
    for (topic_id, want) in [(id, 0), (unknown, ErrorCode::UnknownTopicId.to_i16())] {
        let answer = call(&mut s, &produce(topic_id), 13);
        let (response, _) = kwire::conn::read_response(&answer, kwire::ApiKey::Produce, 13).unwrap();
        let ResponseBodyView::Produce(p) = response.body else { panic!() };
        let partition = p.responses().iter().next().unwrap().partition_responses().iter().next().unwrap();
        assert_eq!(partition.error_code(), want, "{:?}", partition.error_message());
        if want != 0 {
            assert_eq!(partition.error_message(), Some("the proxy cannot name this topic id"));
        }
    }
    assert_stored_encrypted(&broker, "secret.ids", std::slice::from_ref(&secret));
    assert_eq!(broker.end_offset("secret.ids", 0), Some(1));
    let mut c = client(proxy.local_addr(), Compression::None);
    assert_eq!(fetch_all(&mut c, "secret.ids").unwrap()[0].value.as_deref(), Some(&secret[..]));
    rt.block_on(proxy.shutdown_within(Duration::from_secs(2)));
}

//! Share groups (KIP-932) of `kwire::broker` with the Java `KafkaShareConsumer` of
//! kafka-clients (tests/java/harness, `ShareConsumers`): two consumers in one share group
//! on a topic of two partitions; every record is delivered to one of them, a released
//! record is delivered again, and a rejected one is not. Needs the `interop` feature (Java
//! and Maven, as tests/kafka_codec.rs).
#![cfg(feature = "broker")]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use kwire::broker::{Broker, Config};

const RECORDS: usize = 40;

#[test]
fn two_share_consumers_split_a_topic_and_release_and_reject_records() {
    let broker = Broker::start(Config {
        default_partitions: 2,
        share_heartbeat_interval: Duration::from_millis(300),
        share_start_earliest: true,
        ..Config::default()
    })
    .unwrap();
    assert!(broker.create_topic("shared", 2));
    let addr = broker.addr().to_string();
    let n = RECORDS.to_string();
    let (lines, ok) = common::java::run_class(
        "ShareConsumers",
        &[&addr, "shared", "share-group", &n],
        Duration::from_secs(90),
        "KafkaShareConsumer check",
    );
    assert!(ok, "the Java share consumers failed: {lines:?}");
    assert_eq!(
        lines.last().and_then(|l| l["done"].as_bool()),
        Some(true),
        "not every record settled: {lines:?}"
    );
    // value -> [(consumer, delivery, action)]
    let mut seen: BTreeMap<String, Vec<(String, i64, String)>> = BTreeMap::new();
    let mut per_consumer: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.get("value").is_some()) {
        let consumer = l["consumer"].as_str().unwrap().to_string();
        *per_consumer.entry(consumer.clone()).or_default() += 1;
        seen.entry(l["value"].as_str().unwrap().into()).or_default().push((
            consumer,
            l["delivery"].as_i64().unwrap(),
            l["action"].as_str().unwrap().into(),
        ));
    }
    assert_eq!(seen.len(), RECORDS, "every record was delivered: {seen:?}");
    assert_eq!(per_consumer.len(), 2, "both consumers got records: {per_consumer:?}");
    for i in 0..RECORDS {
        let v = format!("r{i}");
        let d = &seen[&v];
        let actions: Vec<(i64, &str)> = d.iter().map(|(_, n, a)| (*n, a.as_str())).collect();
        match i % 5 {
            // Released at the first delivery, delivered again (count 2) and accepted.
            1 => assert_eq!(actions, [(1, "release"), (2, "accept")], "{v}: {d:?}"),
            // Rejected: never delivered again.
            2 => assert_eq!(actions, [(1, "reject")], "{v}: {d:?}"),
            // Accepted once, by one consumer.
            _ => assert_eq!(actions, [(1, "accept")], "{v}: {d:?}"),
        }
    }
}

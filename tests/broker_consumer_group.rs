//! The KIP-848 consumer group protocol of `kwire::broker`, as raw frames: ConsumerGroupHeartbeat
//! (joins, member epochs, the target assignment and the revocation before assignment that
//! reconciliation does, leaving, static members, session timeouts, Kafka's error codes),
//! ConsumerGroupDescribe, and the classic APIs beside it (OffsetCommit/OffsetFetch with member
//! epochs, ListGroups and DescribeGroups types, a classic JoinGroup refused by a live consumer
//! group).
#![cfg(feature = "broker")]

#[path = "common/raw.rs"]
mod raw;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kwire::ApiKey;
use kwire::broker::{Broker, Config};
use kwire::messages::consumer_group_describe::ConsumerGroupDescribeRequest;
use kwire::messages::consumer_group_heartbeat::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatRequestTopicPartitions,
};
use kwire::types::Uuid;
use raw::{Conn, answer};

const NONE: i16 = 0;
const UNKNOWN_MEMBER_ID: i16 = 25;
const UNSUPPORTED_VERSION: i16 = 35;
const INVALID_REQUEST: i16 = 42;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const GROUP_ID_NOT_FOUND: i16 = 69;
const FENCED_INSTANCE_ID: i16 = 82;
const FENCED_MEMBER_EPOCH: i16 = 110;
const UNRELEASED_INSTANCE_ID: i16 = 111;
const UNSUPPORTED_ASSIGNOR: i16 = 112;
const STALE_MEMBER_EPOCH: i16 = 113;
const INVALID_REGULAR_EXPRESSION: i16 = 128;

type Parts = BTreeSet<(Uuid, i32)>;

/// A heartbeat's answer.
#[derive(Debug)]
struct Hb {
    error: i16,
    message: Option<String>,
    member_id: Option<String>,
    epoch: i32,
    interval: i32,
    assignment: Option<Parts>,
}

/// What a member sends (the fields a client sets; `None` is null).
#[derive(Clone, Default)]
struct Ask<'a> {
    group: &'a str,
    member: &'a str,
    epoch: i32,
    instance: Option<&'a str>,
    rebalance_timeout_ms: i32,
    topics: Option<&'a [&'a str]>,
    regex: Option<&'a str>,
    assignor: Option<&'a str>,
    owned: Option<&'a Parts>,
}

impl<'a> Ask<'a> {
    /// A first heartbeat (epoch 0) subscribing to `topics`.
    fn join(group: &'a str, member: &'a str, topics: &'a [&'a str]) -> Ask<'a> {
        static EMPTY: Parts = BTreeSet::new();
        Ask {
            group,
            member,
            epoch: 0,
            rebalance_timeout_ms: 30_000,
            topics: Some(topics),
            owned: Some(&EMPTY),
            ..Default::default()
        }
    }

    /// A later heartbeat: only the epoch and what it owns (if it says).
    fn beat(group: &'a str, member: &'a str, epoch: i32, owned: Option<&'a Parts>) -> Ask<'a> {
        Ask { group, member, epoch, rebalance_timeout_ms: -1, owned, ..Default::default() }
    }
}

fn heartbeat(c: &mut Conn, v: i16, a: &Ask<'_>) -> Hb {
    let owned: Option<Vec<ConsumerGroupHeartbeatRequestTopicPartitions<'_>>> = a.owned.map(|o| {
        let topics: BTreeSet<Uuid> = o.iter().map(|p| p.0).collect();
        topics
            .into_iter()
            .map(|t| ConsumerGroupHeartbeatRequestTopicPartitions {
                topic_id: t,
                partitions: o.iter().filter(|p| p.0 == t).map(|p| p.1).collect::<Vec<i32>>().into(),
                ..Default::default()
            })
            .collect()
    });
    let names: Option<Vec<kwire::types::Str<'_>>> = a.topics.map(|t| t.iter().map(|n| (*n).into()).collect());
    let req = ConsumerGroupHeartbeatRequest {
        group_id: a.group.into(),
        member_id: a.member.into(),
        member_epoch: a.epoch,
        instance_id: a.instance.map(Into::into),
        rebalance_timeout_ms: a.rebalance_timeout_ms,
        subscribed_topic_names: names.map(Into::into),
        subscribed_topic_regex: a.regex.map(Into::into),
        server_assignor: a.assignor.map(Into::into),
        topic_partitions: owned.map(Into::into),
        ..Default::default()
    };
    let frame = c.call(&req, v);
    let r = answer!(frame, ConsumerGroupHeartbeat, v);
    Hb {
        error: r.error_code(),
        message: r.error_message().map(Into::into),
        member_id: r.member_id().map(Into::into),
        epoch: r.member_epoch(),
        interval: r.heartbeat_interval_ms(),
        assignment: r.assignment().map(|a| {
            a.topic_partitions()
                .iter()
                .flat_map(|t| t.partitions().iter().map(move |p| (t.topic_id(), p)))
                .collect()
        }),
    }
}

fn topic_id(c: &mut Conn, name: &str) -> Uuid {
    use kwire::messages::metadata::{MetadataRequest, MetadataRequestTopic};
    let topics = [MetadataRequestTopic { name: Some(name.into()), ..Default::default() }];
    let frame = c.call(&MetadataRequest { topics: Some((&topics).into()), ..Default::default() }, 12);
    let r = answer!(frame, Metadata, 12);
    r.topics().iter().next().unwrap().topic_id()
}

fn started(config: Config) -> (Broker, Conn) {
    let broker = Broker::start(config).unwrap();
    let c = Conn::open_as(broker.addr(), "cg-test");
    (broker, c)
}

fn parts(id: Uuid, range: std::ops::Range<i32>) -> Parts {
    range.map(|p| (id, p)).collect()
}

#[test]
fn api_versions_advertises_the_new_apis() {
    use kwire::messages::api_versions::ApiVersionsRequest;
    let (_broker, mut c) = started(Config::default());
    let frame = c.call(&ApiVersionsRequest::default(), 3);
    let r = answer!(frame, ApiVersions, 3);
    for key in [ApiKey::ConsumerGroupHeartbeat, ApiKey::ConsumerGroupDescribe] {
        let k = r.api_keys().iter().find(|k| k.api_key() == key.to_i16()).expect("advertised");
        assert_eq!((k.min_version(), k.max_version()), (0, key.request_versions().max));
    }
}

/// Two members: the second one's partitions come only after the first one's heartbeat
/// acknowledges their revocation; no partition is ever owned by both.
#[test]
fn revocation_before_assignment() {
    let (broker, mut c) = started(Config::default());
    broker.create_topic("t", 4);
    let t = topic_id(&mut c, "t");
    let all = parts(t, 0..4);

    let a = heartbeat(&mut c, 1, &Ask::join("g", "member-a", &["t"]));
    assert_eq!(a.error, NONE, "{:?}", a.message);
    assert_eq!(a.member_id.as_deref(), Some("member-a"));
    assert_eq!(a.epoch, 1);
    assert_eq!(a.interval, 5000);
    assert_eq!(a.assignment.as_ref(), Some(&all));

    // b joins: epoch 2; the partitions it is meant to get are still a's.
    let b = heartbeat(&mut c, 1, &Ask::join("g", "member-b", &["t"]));
    assert_eq!((b.error, b.epoch), (NONE, 2));
    assert_eq!(b.assignment, Some(Parts::new()), "nothing yet: a owns everything");

    // a is told to give up two (its epoch stays until it has).
    let a2 = heartbeat(&mut c, 1, &Ask::beat("g", "member-a", 1, None));
    assert_eq!((a2.error, a2.epoch), (NONE, 1));
    let kept = a2.assignment.clone().expect("a new assignment");
    assert_eq!(kept.len(), 2);
    assert!(kept.is_subset(&all));

    // Until a says it no longer owns them, b gets nothing more.
    let b2 = heartbeat(&mut c, 1, &Ask::beat("g", "member-b", 2, Some(&Parts::new())));
    assert_eq!((b2.error, b2.epoch), (NONE, 2));
    assert_eq!(b2.assignment, None, "unchanged");
    // a heartbeats again, still owning everything: no progress.
    let a3 = heartbeat(&mut c, 1, &Ask::beat("g", "member-a", 1, Some(&all)));
    assert_eq!((a3.error, a3.epoch), (NONE, 1));

    // a acknowledges: it moves to epoch 2 with the two it kept.
    let a4 = heartbeat(&mut c, 1, &Ask::beat("g", "member-a", 1, Some(&kept)));
    assert_eq!((a4.error, a4.epoch), (NONE, 2));
    // Its epoch moved; whether the answer repeats the assignment or not, it is `kept`.
    if let Some(x) = &a4.assignment {
        assert_eq!(x, &kept);
    }
    let b3 = heartbeat(&mut c, 1, &Ask::beat("g", "member-b", 2, Some(&Parts::new())));
    let gained = b3.assignment.expect("b's partitions now");
    assert_eq!(gained, all.difference(&kept).copied().collect::<Parts>());

    // The group is stable: describe it.
    let frame = c.call(
        &ConsumerGroupDescribeRequest {
            group_ids: vec!["g".into(), "nope".into()].into(),
            ..Default::default()
        },
        1,
    );
    let r = answer!(frame, ConsumerGroupDescribe, 1);
    let groups: Vec<_> = r.groups().iter().collect();
    let g = &groups[0];
    assert_eq!(g.error_code(), NONE);
    assert_eq!(
        (g.group_state(), g.group_epoch(), g.assignment_epoch(), g.assignor_name()),
        ("Stable", 2, 2, "uniform")
    );
    let members: Vec<_> = g.members().iter().collect();
    assert_eq!(members.len(), 2);
    for m in &members {
        assert_eq!(m.member_epoch(), 2);
        assert_eq!(m.client_id(), "cg-test");
        assert_eq!(m.member_type(), 1);
        assert_eq!(m.subscribed_topic_names().iter().collect::<Vec<_>>(), ["t"]);
        let owned: Vec<_> = m.assignment().topic_partitions().iter().collect();
        assert_eq!(owned.len(), 1);
        assert_eq!(owned[0].topic_name(), "t");
        assert_eq!(owned[0].partitions().len(), 2);
    }
    assert_eq!(groups[1].error_code(), GROUP_ID_NOT_FOUND);
}

/// A member leaving (epoch -1) bumps the group epoch and its partitions go to the others.
#[test]
fn leaving_frees_partitions() {
    let (broker, mut c) = started(Config::default());
    broker.create_topic("t", 3);
    let t = topic_id(&mut c, "t");
    let a = heartbeat(&mut c, 1, &Ask::join("g", "a", &["t"]));
    let b = heartbeat(&mut c, 1, &Ask::join("g", "b", &["t"]));
    assert_eq!((a.epoch, b.epoch), (1, 2));
    let a2 = heartbeat(&mut c, 1, &Ask::beat("g", "a", 1, None));
    let kept = a2.assignment.unwrap();
    heartbeat(&mut c, 1, &Ask::beat("g", "a", 1, Some(&kept)));
    let b2 = heartbeat(&mut c, 1, &Ask::beat("g", "b", 2, Some(&Parts::new())));
    assert!(!b2.assignment.unwrap().is_empty());

    let left = heartbeat(&mut c, 1, &Ask { epoch: -1, ..Ask::beat("g", "a", -1, None) });
    assert_eq!((left.error, left.member_id.as_deref(), left.epoch), (NONE, Some("a"), -1));
    let b3 = heartbeat(&mut c, 1, &Ask::beat("g", "b", 2, None));
    assert_eq!(b3.epoch, 3);
    assert_eq!(b3.assignment, Some(parts(t, 0..3)));
    // a is gone.
    let again = heartbeat(&mut c, 1, &Ask::beat("g", "a", 2, None));
    assert_eq!(again.error, UNKNOWN_MEMBER_ID);
    assert!(again.member_id.is_none());
}

#[test]
fn session_timeout_fences_a_silent_member() {
    let config = Config { consumer_session_timeout: Duration::from_millis(400), ..Config::default() };
    let (broker, mut c) = started(config);
    broker.create_topic("t", 2);
    let t = topic_id(&mut c, "t");
    heartbeat(&mut c, 1, &Ask::join("g", "quiet", &["t"]));
    let b = heartbeat(&mut c, 1, &Ask::join("g", "busy", &["t"]));
    assert_eq!(b.epoch, 2);
    // busy keeps heartbeating; quiet does not, and is fenced, then busy gets everything.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut epoch = b.epoch;
    let mut owned = Parts::new();
    while owned != parts(t, 0..2) {
        assert!(Instant::now() < deadline, "busy never got both partitions");
        std::thread::sleep(Duration::from_millis(100));
        let h = heartbeat(&mut c, 1, &Ask::beat("g", "busy", epoch, Some(&owned)));
        assert_eq!(h.error, NONE);
        epoch = h.epoch;
        if let Some(a) = h.assignment {
            owned = a;
        }
    }
    assert_eq!(epoch, 3);
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("g", "quiet", 1, None)).error, UNKNOWN_MEMBER_ID);
}

#[test]
fn bad_heartbeats_get_kafkas_errors() {
    let (broker, mut c) = started(Config::default());
    broker.create_topic("t", 2);
    let cases: Vec<(Ask<'_>, i16, i16, &str)> = vec![
        (Ask::join("g", "", &["t"]), 1, INVALID_REQUEST, "MemberId can't be empty."),
        (Ask::join("", "m", &["t"]), 1, INVALID_REQUEST, "GroupId can't be empty."),
        (
            Ask { rebalance_timeout_ms: -1, ..Ask::join("g", "m", &["t"]) },
            1,
            INVALID_REQUEST,
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            Ask { owned: None, ..Ask::join("g", "m", &["t"]) },
            1,
            INVALID_REQUEST,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            Ask { topics: None, ..Ask::join("g", "m", &["t"]) },
            1,
            INVALID_REQUEST,
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        (Ask::beat("g", "m", -3, None), 1, INVALID_REQUEST, "MemberEpoch is invalid."),
        (Ask::beat("g", "m", -2, None), 1, INVALID_REQUEST, "InstanceId can't be null."),
        (
            Ask { assignor: Some("sticky"), ..Ask::join("g", "m", &["t"]) },
            1,
            UNSUPPORTED_ASSIGNOR,
            "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
        ),
        (
            Ask { regex: Some("t(("), topics: None, ..Ask::join("g", "m", &["t"]) },
            1,
            INVALID_REGULAR_EXPRESSION,
            "",
        ),
        (Ask::beat("nope", "m", 3, None), 1, GROUP_ID_NOT_FOUND, "Consumer group nope not found."),
        (Ask::beat("nope", "m", -1, None), 1, GROUP_ID_NOT_FOUND, "Consumer group nope not found."),
    ];
    for (ask, v, code, message) in &cases {
        let h = heartbeat(&mut c, *v, ask);
        assert_eq!(h.error, *code, "{:?}", h.message);
        if !message.is_empty() {
            assert_eq!(h.message.as_deref(), Some(*message));
        }
        assert!(h.member_id.is_none());
    }
    // Epochs: ahead, behind (not the previous one), and an unknown member.
    let m = heartbeat(&mut c, 1, &Ask::join("g", "m", &["t"]));
    assert_eq!(m.epoch, 1);
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("g", "m", 5, None)).error, FENCED_MEMBER_EPOCH);
    let n = heartbeat(&mut c, 1, &Ask::join("g", "n", &["t"]));
    assert_eq!(n.epoch, 2);
    // m revokes its partition and reaches epoch 2.
    let m2 = heartbeat(&mut c, 1, &Ask::beat("g", "m", 1, None));
    let mine = m2.assignment.unwrap();
    let m3 = heartbeat(&mut c, 1, &Ask::beat("g", "m", 1, Some(&mine)));
    assert_eq!(m3.epoch, 2);
    // The previous epoch (1) with a subset of its partitions is accepted; 0 is not.
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("g", "m", 1, Some(&mine))).error, NONE);
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("g", "m", 1, None)).error, FENCED_MEMBER_EPOCH);
    assert_eq!(heartbeat(&mut c, 1, &Ask::join("g", "m", &["t"])).error, FENCED_MEMBER_EPOCH);
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("g", "who", 2, None)).error, UNKNOWN_MEMBER_ID);
    // The broker is still fine for everyone.
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("g", "n", 2, None)).error, NONE);
}

/// Version 0: the broker picks the member id (Kafka's base64 UUID), and requires it after.
#[test]
fn version_0_gets_a_member_id() {
    let (broker, mut c) = started(Config::default());
    broker.create_topic("t", 1);
    let h = heartbeat(&mut c, 0, &Ask::join("g", "", &["t"]));
    assert_eq!(h.error, NONE);
    let id = h.member_id.unwrap();
    assert_eq!(id.len(), 22);
    assert!(id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    assert_eq!(heartbeat(&mut c, 0, &Ask::beat("g", &id, 1, None)).error, NONE);
    assert_eq!(heartbeat(&mut c, 0, &Ask::beat("g", "", 1, None)).error, INVALID_REQUEST);
}

/// A static member leaving with epoch -2 keeps its partitions; coming back under a new
/// member id it takes them over; its instance id is its own meanwhile.
#[test]
fn static_members() {
    let (broker, mut c) = started(Config::default());
    broker.create_topic("t", 2);
    let t = topic_id(&mut c, "t");
    let s = heartbeat(&mut c, 1, &Ask { instance: Some("i1"), ..Ask::join("g", "s1", &["t"]) });
    assert_eq!(s.assignment, Some(parts(t, 0..2)));
    // Another process claiming the same instance while s1 is live.
    let dup = heartbeat(&mut c, 1, &Ask { instance: Some("i1"), ..Ask::join("g", "s2", &["t"]) });
    assert_eq!(dup.error, UNRELEASED_INSTANCE_ID);
    let wrong = heartbeat(&mut c, 1, &Ask { instance: Some("i1"), ..Ask::beat("g", "s2", 1, None) });
    assert_eq!(wrong.error, FENCED_INSTANCE_ID);
    // s1 leaves for a while.
    let away = heartbeat(&mut c, 1, &Ask { instance: Some("i1"), ..Ask::beat("g", "s1", -2, None) });
    assert_eq!((away.error, away.epoch), (NONE, -2));
    // A dynamic member joining meanwhile gets nothing: the static member's partitions wait.
    let d = heartbeat(&mut c, 1, &Ask::join("g", "d", &["t"]));
    assert_eq!(d.error, NONE);
    let describe = |c: &mut Conn| {
        let frame = c.call(
            &ConsumerGroupDescribeRequest { group_ids: vec!["g".into()].into(), ..Default::default() },
            0,
        );
        let r = answer!(frame, ConsumerGroupDescribe, 0);
        let g = r.groups().iter().next().unwrap();
        g.members()
            .iter()
            .map(|m| {
                (
                    m.member_id().to_string(),
                    m.member_epoch(),
                    m.assignment().topic_partitions().iter().map(|t| t.partitions().len()).sum::<usize>(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(describe(&mut c).contains(&("s1".to_string(), -2, 2)));
    // It comes back as s2: the partitions it had are its own again, with no revocation.
    let back = heartbeat(&mut c, 1, &Ask { instance: Some("i1"), ..Ask::join("g", "s2", &["t"]) });
    assert_eq!(back.error, NONE, "{:?}", back.message);
    let got = back.assignment.unwrap();
    assert!(!got.is_empty() && got.is_subset(&parts(t, 0..2)));
    let members = describe(&mut c);
    assert!(members.iter().all(|m| m.0 != "s1"), "{members:?}");
    // Leaving for good (-1) by instance.
    let gone = heartbeat(&mut c, 1, &Ask { instance: Some("i1"), ..Ask::beat("g", "s2", -1, None) });
    assert_eq!(gone.error, NONE);
    assert!(describe(&mut c).iter().all(|m| m.0 != "s2"));
}

#[test]
fn range_assignor_and_regex_subscriptions() {
    let (broker, mut c) = started(Config::default());
    broker.create_topic("orders-eu", 3);
    broker.create_topic("orders-us", 3);
    broker.create_topic("other", 3);
    let eu = topic_id(&mut c, "orders-eu");
    let us = topic_id(&mut c, "orders-us");
    let a = heartbeat(
        &mut c,
        1,
        &Ask { regex: Some("orders-.*"), topics: None, assignor: Some("range"), ..Ask::join("g", "a", &[]) },
    );
    assert_eq!(a.error, NONE, "{:?}", a.message);
    let want: Parts = parts(eu, 0..3).union(&parts(us, 0..3)).copied().collect();
    assert_eq!(a.assignment, Some(want));
    let b = heartbeat(
        &mut c,
        1,
        &Ask { assignor: Some("range"), ..Ask::join("g", "b", &["orders-eu", "orders-us"]) },
    );
    assert_eq!(b.error, NONE);
    // Range: a (first by member id) keeps partitions 0 and 1 of each topic, b gets 2.
    let a2 = heartbeat(&mut c, 1, &Ask::beat("g", "a", 1, None));
    let kept = a2.assignment.unwrap();
    assert_eq!(kept, [(eu, 0), (eu, 1), (us, 0), (us, 1)].into_iter().collect::<Parts>());
    heartbeat(&mut c, 1, &Ask::beat("g", "a", 1, Some(&kept)));
    let b2 = heartbeat(&mut c, 1, &Ask::beat("g", "b", 2, Some(&Parts::new())));
    assert_eq!(b2.assignment, Some([(eu, 2), (us, 2)].into_iter().collect()));
}

/// OffsetCommit and OffsetFetch (v9+) check the member and its epoch in a consumer group;
/// ListGroups and DescribeGroups tell the group types apart; a classic JoinGroup cannot join
/// a live consumer group.
#[test]
fn classic_apis_beside_consumer_groups() {
    use kwire::messages::describe_groups::DescribeGroupsRequest;
    use kwire::messages::list_groups::ListGroupsRequest;
    use kwire::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestGroup};
    let (broker, mut c) = started(Config::default());
    broker.create_topic("t", 2);
    let t = topic_id(&mut c, "t");
    let m = heartbeat(&mut c, 1, &Ask::join("cg", "m", &["t"]));
    assert_eq!(m.epoch, 1);
    let n = heartbeat(&mut c, 1, &Ask::join("cg", "n", &["t"]));
    assert_eq!(n.epoch, 2);

    let commit = |c: &mut Conn, v: i16, member: &str, epoch: i32, offset: i64| -> Vec<i16> {
        c.offset_commit(v, "cg", (member, epoch), "t", &[(0, offset), (1, offset)])
    };
    // m is at epoch 1 owning both partitions (its revocation is not acknowledged yet).
    assert_eq!(commit(&mut c, 9, "m", 1, 10), [NONE, NONE]);
    assert_eq!(commit(&mut c, 9, "m", 2, 10), [STALE_MEMBER_EPOCH; 2]);
    assert_eq!(commit(&mut c, 9, "who", 1, 10), [UNKNOWN_MEMBER_ID; 2]);
    assert_eq!(commit(&mut c, 8, "m", 1, 10), [UNSUPPORTED_VERSION; 2]);
    assert_eq!(commit(&mut c, 9, "", -1, 10), [UNKNOWN_MEMBER_ID; 2], "a plain commit needs an empty group");
    // m acknowledges the revocation, reaching epoch 2 with one partition: a commit with its
    // older epoch 1 still goes through for the partition it had since then, not the other.
    let m2 = heartbeat(&mut c, 1, &Ask::beat("cg", "m", 1, None));
    let kept = m2.assignment.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(heartbeat(&mut c, 1, &Ask::beat("cg", "m", 1, Some(&kept))).epoch, 2);
    let kept_p = kept.iter().next().unwrap().1;
    let codes = commit(&mut c, 9, "m", 1, 20);
    assert_eq!(codes[kept_p as usize], NONE);
    assert_eq!(codes[1 - kept_p as usize], STALE_MEMBER_EPOCH);
    assert_eq!(commit(&mut c, 9, "m", 2, 21), [NONE, NONE]);

    let fetch = |c: &mut Conn, member: Option<&str>, epoch: i32| -> (i16, Vec<i64>) {
        let groups = [OffsetFetchRequestGroup {
            group_id: "cg".into(),
            member_id: member.map(Into::into),
            member_epoch: epoch,
            topics: None,
            ..Default::default()
        }];
        let frame = c.call(&OffsetFetchRequest { groups: (&groups).into(), ..Default::default() }, 9);
        let r = answer!(frame, OffsetFetch, 9);
        let g = r.groups().iter().next().unwrap();
        (
            g.error_code(),
            g.topics()
                .iter()
                .flat_map(|t| t.partitions().iter().map(|p| p.committed_offset()).collect::<Vec<_>>())
                .collect(),
        )
    };
    assert_eq!(fetch(&mut c, Some("m"), 2), (NONE, vec![21, 21]));
    assert_eq!(fetch(&mut c, None, -1), (NONE, vec![21, 21]));
    assert_eq!(fetch(&mut c, Some("m"), 1).0, STALE_MEMBER_EPOCH);
    assert_eq!(fetch(&mut c, Some("who"), 1).0, UNKNOWN_MEMBER_ID);
    let _ = t;

    // A classic group beside it.
    let join = |c: &mut Conn, group: &str| -> i16 {
        c.join_group(3, group, "", "consumer", ("range", &[0u8, 0, 0, 0, 0, 0])).0
    };
    assert_eq!(join(&mut c, "classic"), NONE);
    assert_eq!(join(&mut c, "cg"), INCONSISTENT_GROUP_PROTOCOL);
    // A consumer-group heartbeat to the live classic group.
    let h = heartbeat(&mut c, 1, &Ask::join("classic", "x", &["t"]));
    assert_eq!(
        (h.error, h.message.as_deref()),
        (GROUP_ID_NOT_FOUND, Some("Group classic is not a consumer group."))
    );

    let frame = c.call(&ListGroupsRequest::default(), 5);
    let r = answer!(frame, ListGroups, 5);
    let mut listed: Vec<(String, String, String, String)> = r
        .groups()
        .iter()
        .map(|g| {
            (g.group_id().into(), g.protocol_type().into(), g.group_state().into(), g.group_type().into())
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("cg".into(), "consumer".into(), "Reconciling".into(), "consumer".into()),
            ("classic".into(), "consumer".into(), "CompletingRebalance".into(), "classic".into()),
        ]
    );
    let types = [kwire::types::Str::from("consumer")];
    let frame = c.call(&ListGroupsRequest { types_filter: (&types).into(), ..Default::default() }, 5);
    let r = answer!(frame, ListGroups, 5);
    assert_eq!(r.groups().iter().map(|g| g.group_id().to_string()).collect::<Vec<_>>(), ["cg"]);

    let frame = c.call(&DescribeGroupsRequest { groups: vec!["cg".into()].into(), ..Default::default() }, 6);
    let r = answer!(frame, DescribeGroups, 6);
    let g = r.groups().iter().next().unwrap();
    assert_eq!((g.error_code(), g.group_state()), (GROUP_ID_NOT_FOUND, "Dead"));
    let frame = c.call(
        &ConsumerGroupDescribeRequest { group_ids: vec!["classic".into()].into(), ..Default::default() },
        1,
    );
    let r = answer!(frame, ConsumerGroupDescribe, 1);
    assert_eq!(r.groups().iter().next().unwrap().error_code(), GROUP_ID_NOT_FOUND);
}

/// A topic created after the members joined, that they subscribe to, is assigned at their
/// next heartbeat (the group epoch moves with the metadata).
#[test]
fn new_partitions_are_assigned() {
    let (broker, mut c) = started(Config::default());
    let a = heartbeat(&mut c, 1, &Ask::join("g", "a", &["later"]));
    assert_eq!((a.error, a.epoch, a.assignment), (NONE, 1, Some(Parts::new())));
    broker.create_topic("later", 2);
    let t = topic_id(&mut c, "later");
    let a2 = heartbeat(&mut c, 1, &Ask::beat("g", "a", 1, None));
    assert_eq!((a2.epoch, a2.assignment), (2, Some(parts(t, 0..2))));
}

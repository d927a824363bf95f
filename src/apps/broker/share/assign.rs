//! The share group assignor: Kafka's `SimpleAssignor` balance, computed afresh. For each
//! topic, with S subscribed members and P partitions, every partition gets
//! ceil(S / P) members (so with more members than partitions, partitions are shared),
//! and the members' counts differ by one at most. Unlike Kafka's it is not sticky: a
//! change of members may move partitions that Kafka would leave in place.

use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::vec::Vec;

use crate::codec::types::Uuid;

/// Each member's assignment (topic id → sorted partitions), from the members (id,
/// subscribed topic names; in a stable order) and the subscribed topics (name, id,
/// partition count).
pub(crate) fn simple(
    members: &[(&str, &[String])],
    topics: &[(String, Uuid, usize)],
) -> BTreeMap<String, BTreeMap<Uuid, Vec<i32>>> {
    let mut out: BTreeMap<String, BTreeMap<Uuid, Vec<i32>>> = BTreeMap::new();
    for (name, id, partitions) in topics {
        let subs: Vec<&str> =
            members.iter().filter(|(_, s)| s.iter().any(|n| n == name)).map(|(m, _)| *m).collect();
        let (s, p) = (subs.len(), *partitions);
        if s == 0 || p == 0 {
            continue;
        }
        // Slot k goes to member k mod S and partition k mod P: no member gets a partition
        // twice, as S·P's least common multiple is at least the slot count P·ceil(S/P).
        let slots = p * s.div_ceil(p);
        for k in 0..slots {
            let parts = out.entry(subs[k % s].to_string()).or_default().entry(*id).or_default();
            parts.push((k % p) as i32);
        }
    }
    for topics in out.values_mut() {
        for parts in topics.values_mut() {
            parts.sort_unstable();
            parts.dedup();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    fn run(members: usize, partitions: usize) -> Vec<Vec<i32>> {
        let subs = ["t".to_string()];
        let ids: Vec<String> = (0..members).map(|i| std::format!("m{i}")).collect();
        let ms: Vec<(&str, &[String])> = ids.iter().map(|i| (i.as_str(), &subs[..])).collect();
        let out = simple(&ms, &[("t".into(), Uuid([7; 16]), partitions)]);
        ids.iter()
            .map(|i| out.get(i).and_then(|t| t.get(&Uuid([7; 16]))).cloned().unwrap_or_default())
            .collect()
    }

    #[test]
    fn every_partition_is_served_and_shared_when_members_outnumber_them() {
        assert_eq!(run(2, 4), [vec![0, 2], vec![1, 3]]);
        assert_eq!(run(3, 2), [vec![0, 1], vec![1], vec![0]]);
        assert_eq!(run(4, 2), [vec![0], vec![1], vec![0], vec![1]]);
        for (m, p) in [(1, 1), (2, 3), (5, 3), (6, 4), (3, 7)] {
            let a = run(m, p);
            let mut per_partition = std::vec![0; p];
            for parts in &a {
                for &x in parts {
                    per_partition[x as usize] += 1;
                }
            }
            assert!(per_partition.iter().all(|&n| n == m.div_ceil(p)), "{m} members, {p} partitions: {a:?}");
        }
    }
}

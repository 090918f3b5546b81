//! Which live replica runs each node's kubelet: rendezvous (highest random weight) hashing.
//!
//! Every replica scores each (node, replica) pair with the same fixed hash and gives the node to
//! the replica with the highest score. Replicas that see the same live set agree without talking;
//! a replica joining takes from each other replica only the nodes it now scores highest on (about
//! 1/N of them), and a replica leaving hands only its own nodes to the others. The hash is
//! spelled out here (FNV-1a, then a SplitMix64 finisher) rather than taken from `std`, whose
//! hasher may change between Rust releases: replicas of different builds must still agree.

/// The weight of `replica` for `node`.
pub fn weight(node: &str, replica: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    // 0xff never occurs in UTF-8, so ("ab", "c") and ("a", "bc") hash apart.
    for b in node.bytes().chain([0xff]).chain(replica.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(PRIME);
    }
    // FNV alone mixes the last bytes poorly; SplitMix64's finisher spreads them over all bits.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The replica among `live` that runs `node`'s kubelet (`None` when no replica is live). Ties,
/// vanishingly rare, go to the smaller name so that every replica still agrees.
pub fn owner<'a>(node: &str, live: &'a [String]) -> Option<&'a str> {
    live.iter()
        .map(|r| (weight(node, r), r.as_str()))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(a.1)))
        .map(|(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn replicas(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn nodes(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("node-{i}")).collect()
    }

    fn assignment(nodes: &[String], live: &[String]) -> BTreeMap<String, String> {
        nodes
            .iter()
            .map(|n| (n.clone(), owner(n, live).unwrap_or_default().to_string()))
            .collect()
    }

    #[test]
    fn the_same_inputs_give_the_same_owner_whatever_the_order_of_the_replicas() {
        let a = replicas(&["host-6443", "host-6444", "host-6445"]);
        let mut b = a.clone();
        b.reverse();
        for n in nodes(200) {
            assert_eq!(owner(&n, &a), owner(&n, &b), "{n}");
        }
        // Pinned: a change of hash would move every node of a running cluster at an upgrade.
        assert_eq!(weight("node-1", "host-6443"), 0x534ef304711c8e1f);
        assert_ne!(weight("ab", "c"), weight("a", "bc"));
    }

    #[test]
    fn no_live_replica_owns_nothing_and_one_replica_owns_everything() {
        assert_eq!(owner("node-1", &[]), None);
        let one = replicas(&["only"]);
        assert!(nodes(50).iter().all(|n| owner(n, &one) == Some("only")));
    }

    #[test]
    fn a_thousand_nodes_spread_evenly_over_three_replicas() {
        let live = replicas(&["berth-a-6443", "berth-b-6443", "berth-c-6443"]);
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for owner in assignment(&nodes(1000), &live).into_values() {
            *count.entry(owner).or_default() += 1;
        }
        // 333 each on average; a binomial spread of 1000 draws stays within about 3 sigma (45).
        for (replica, n) in &count {
            assert!(
                (333 - 60..=333 + 60).contains(n),
                "{replica} runs {n} of 1000"
            );
        }
        assert_eq!(count.len(), 3);
    }

    #[test]
    fn a_replica_joining_takes_about_a_third_and_moves_nothing_else() {
        let all = nodes(1000);
        let two = replicas(&["host-6443", "host-6444"]);
        let three = replicas(&["host-6443", "host-6444", "host-6445"]);
        let before = assignment(&all, &two);
        let after = assignment(&all, &three);
        let moved: Vec<_> = all.iter().filter(|n| before[*n] != after[*n]).collect();
        // Every node that moved went to the newcomer, none between the old replicas.
        assert!(moved.iter().all(|n| after[*n] == "host-6445"));
        assert!(
            (333 - 60..=333 + 60).contains(&moved.len()),
            "{} moved",
            moved.len()
        );
    }

    #[test]
    fn a_replica_leaving_hands_over_only_its_own_nodes() {
        let all = nodes(1000);
        let three = replicas(&["host-6443", "host-6444", "host-6445"]);
        let two = replicas(&["host-6443", "host-6445"]);
        let before = assignment(&all, &three);
        let after = assignment(&all, &two);
        for n in &all {
            if before[n] != "host-6444" {
                assert_eq!(before[n], after[n], "{n} moved though its replica stayed");
            }
        }
    }
}

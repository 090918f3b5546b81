//! The incremental layer over the memo: per score value, a bitset of the nodes (by name rank)
//! that pass the fast test with that score, kept up to date from the cache's change log. A
//! decision then touches only the nodes that changed since the previous one, the nodes that need
//! their predicates run, and the nodes the pod's inter-pod affinity state rules out; selection
//! scans one bitset. Results are identical to the memo loop (same RNG use).

use super::filter::{check_node, fast_ok, FastPlan};
use super::memo::{fused, MemoKey, MemoRun};
use super::PodCtx;
use crate::predicates::{match_inter_pod_affinity, Pred};
use rand::Rng;

/// A bitset over name ranks.
#[derive(Debug, Default, Clone)]
struct Bits {
    words: Vec<u64>,
    count: usize,
}

impl Bits {
    fn with_len(n: usize) -> Bits {
        Bits {
            words: vec![0; n.div_ceil(64)],
            count: 0,
        }
    }
    #[inline]
    fn set(&mut self, r: u32) {
        let (w, b) = ((r / 64) as usize, r % 64);
        if self.words[w] & (1 << b) == 0 {
            self.words[w] |= 1 << b;
            self.count += 1;
        }
    }
    #[inline]
    fn has(&self, r: u32) -> bool {
        self.words[(r / 64) as usize] & (1 << (r % 64)) != 0
    }
    #[inline]
    fn clear(&mut self, r: u32) {
        let (w, b) = ((r / 64) as usize, r % 64);
        if self.words[w] & (1 << b) != 0 {
            self.words[w] &= !(1 << b);
            self.count -= 1;
        }
    }
    /// The `k`-th set rank (0-based), by popcount over words.
    fn select(&self, mut k: usize) -> Option<u32> {
        for (i, &w) in self.words.iter().enumerate() {
            let c = w.count_ones() as usize;
            if k < c {
                let mut w = w;
                for _ in 0..k {
                    w &= w - 1;
                }
                return Some(i as u32 * 64 + w.trailing_zeros());
            }
            k -= c;
        }
        None
    }
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros();
                w &= w - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }
}

/// Incremental state, valid for one memo key, order epoch and log epoch.
#[derive(Debug, Default)]
pub(crate) struct Incremental {
    valid: Option<(MemoKey, u64, u64)>,
    log_pos: usize,
    /// Per node slot: fused score (≥ 0) if the node passes the fast test, else -1.
    vals: Vec<i64>,
    buckets: Vec<Bits>,
    slow: Bits,
    hidden: Vec<(u32, i64)>,
    /// Nodes hidden for this decision by topology spread (domains over their limit).
    hidden_spread: Vec<(u32, i64)>,
}

impl Incremental {
    fn place(&mut self, r: u32, v: i64, on: bool) {
        let b = if v >= 0 {
            &mut self.buckets[v as usize]
        } else {
            &mut self.slow
        };
        if on {
            b.set(r)
        } else {
            b.clear(r)
        }
    }

    fn rebuild(&mut self, c: &PodCtx, plan: &FastPlan, w: (i64, i64, i64), max_score: usize) {
        let cache = c.cache;
        let n = cache.order.len();
        self.vals.clear();
        self.vals.resize(cache.nodes.len(), -1);
        self.buckets = vec![Bits::with_len(n); max_score + 1];
        self.slow = Bits::with_len(n);
        for (r, &ix) in cache.order.iter().enumerate() {
            let h = &cache.hot[ix as usize];
            let v = if fast_ok(plan, &c.pod.request, h) {
                fused(c, w, h)
            } else {
                -1
            };
            self.vals[ix as usize] = v;
            self.place(r as u32, v, true);
        }
        self.log_pos = cache.change_log.len();
    }

    fn catch_up(&mut self, c: &PodCtx, plan: &FastPlan, w: (i64, i64, i64)) {
        let cache = c.cache;
        for &ix in &cache.change_log[self.log_pos..] {
            let r = cache.rank.get(ix as usize).copied().unwrap_or(u32::MAX);
            if r == u32::MAX {
                continue;
            }
            let old = self.vals[ix as usize];
            let h = &cache.hot[ix as usize];
            let v = if fast_ok(plan, &c.pod.request, h) {
                fused(c, w, h)
            } else {
                -1
            };
            if v != old {
                self.place(r, old, false);
                self.place(r, v, true);
                self.vals[ix as usize] = v;
            }
        }
        self.log_pos = cache.change_log.len();
    }
}

/// Runs a decision incrementally; returns the summary and the chosen (slot, only feasible node).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    c: &PodCtx,
    preds: &[Pred],
    always: bool,
    plan: FastPlan,
    key: MemoKey,
    w: (i64, i64, i64),
    st: &mut Incremental,
    rng: &mut rand::rngs::SmallRng,
) -> Result<(MemoRun, Option<(u32, bool)>), String> {
    let cache = c.cache;
    // one bucket per possible fused score: the scale's maximum times the summed weights
    let max_score = (c.scale.max() * (w.0 + w.1 + w.2)).max(0) as usize;
    let stamp = (key, cache.order_epoch, cache.log_epoch);
    if st.valid != Some(stamp)
        || st.vals.len() != cache.nodes.len()
        || st.log_pos > cache.change_log.len()
    {
        st.rebuild(c, &plan, w, max_score);
        st.valid = Some(stamp);
    } else {
        st.catch_up(c, &plan, w);
    }
    let mut out = MemoRun {
        failed: Vec::new(),
        max: i64::MIN,
        ties: 0,
    };
    // nodes the pod's inter-pod affinity state rules out: off the buckets for this decision
    let mut hidden = std::mem::take(&mut st.hidden);
    hidden.clear();
    if plan.affinity {
        for &ix in c.affinity.flagged {
            let r = cache.rank.get(ix as usize).copied().unwrap_or(u32::MAX);
            let v = st.vals.get(ix as usize).copied().unwrap_or(-1);
            if r == u32::MAX || v < 0 {
                continue; // absent, or a slow node (its predicates run below)
            }
            st.place(r, v, false);
            hidden.push((r, v));
        }
    }
    // nodes in a domain over a topology spread constraint's limit: off the buckets too
    let mut hidden_spread = std::mem::take(&mut st.hidden_spread);
    hidden_spread.clear();
    if plan.spread {
        let s = &c.spread;
        for (k, con) in s.constraints.iter().enumerate() {
            for (&value, &count) in &s.counts[k] {
                if count <= s.limits[k] {
                    continue;
                }
                let Some(&id) = cache.topo.get(&(con.key, value)) else {
                    continue;
                };
                for &ix in &cache.domains[id as usize] {
                    let r = cache.rank.get(ix as usize).copied().unwrap_or(u32::MAX);
                    let v = st.vals.get(ix as usize).copied().unwrap_or(-1);
                    if r == u32::MAX || v < 0 || !st.buckets[v as usize].has(r) {
                        continue; // absent, slow (its predicates run below), or hidden already
                    }
                    st.place(r, v, false);
                    hidden_spread.push((r, v));
                }
            }
        }
    }
    let result = (|| {
        // slow nodes: run their predicates
        let mut slow_fit: Vec<(u32, i64)> = Vec::new();
        let mut reasons = Vec::new();
        for r in st.slow.iter() {
            let ix = cache.order[r as usize];
            reasons.clear();
            if check_node(c, preds, always, ix, &[], &mut reasons)? {
                slow_fit.push((r, fused(c, w, &cache.hot[ix as usize])));
            } else {
                out.failed.extend(reasons.iter().map(|x| (ix, *x)));
            }
        }
        let top = (0..st.buckets.len())
            .rev()
            .find(|&s| st.buckets[s].count > 0);
        let fast_total: usize = st.buckets.iter().map(|b| b.count).sum();
        let total = fast_total + slow_fit.len();
        if total == 0 {
            // nodes hidden by topology spread: their predicates give their reasons
            for &(r, _) in &hidden_spread {
                let ix = cache.order[r as usize];
                reasons.clear();
                if !check_node(c, preds, always, ix, &[], &mut reasons)? {
                    out.failed.extend(reasons.iter().map(|x| (ix, *x)));
                }
            }
            // every other predicate passes on hidden nodes; MatchInterPodAffinity (last) fails
            for &(r, _) in &hidden {
                let ix = cache.order[r as usize];
                let fl = c.affinity.flags[ix as usize];
                out.failed
                    .push((ix, match_inter_pod_affinity::AFFINITY_NOT_MATCH.reason()));
                out.failed.push((
                    ix,
                    if fl & 1 != 0 {
                        match_inter_pod_affinity::EXISTING_ANTI_AFFINITY_NOT_MATCH.reason()
                    } else {
                        match_inter_pod_affinity::ANTI_AFFINITY_RULES_NOT_MATCH.reason()
                    },
                ));
            }
            return Ok(None);
        }
        let slow_max = slow_fit.iter().map(|x| x.1).max();
        let max = top.map(|t| t as i64).max(slow_max).unwrap_or(0);
        let in_bucket = top
            .filter(|&t| t as i64 == max)
            .map_or(0, |t| st.buckets[t].count);
        let slow_ties: Vec<u32> = slow_fit
            .iter()
            .filter(|x| x.1 == max)
            .map(|x| x.0)
            .collect();
        let ties = in_bucket + slow_ties.len();
        out.max = max;
        out.ties = ties;
        if total == 1 {
            let r = match top {
                Some(t) => st.buckets[t].iter().next().unwrap_or(0),
                None => slow_fit[0].0,
            };
            return Ok(Some((cache.order[r as usize], true)));
        }
        let k = if ties > 1 {
            rng.random_range(0..ties)
        } else {
            0
        };
        // k-th tie in name order across the bucket and the slow ties
        if slow_ties.is_empty() {
            let r = st.buckets[max as usize].select(k).unwrap_or(0);
            return Ok(Some((cache.order[r as usize], false)));
        }
        let bucket_iter: Box<dyn Iterator<Item = u32>> = if in_bucket > 0 {
            Box::new(st.buckets[max as usize].iter())
        } else {
            Box::new(std::iter::empty())
        };
        let mut a = bucket_iter.peekable();
        let mut b = slow_ties.iter().copied().peekable();
        let mut chosen = 0;
        for _ in 0..=k {
            chosen = match (a.peek(), b.peek()) {
                (Some(&x), Some(&y)) if x < y => a.next().unwrap_or(x),
                (Some(_), Some(&y)) => b.next().unwrap_or(y),
                (Some(&x), None) => a.next().unwrap_or(x),
                (None, Some(&y)) => b.next().unwrap_or(y),
                (None, None) => break,
            };
        }
        Ok(Some((cache.order[chosen as usize], false)))
    })();
    for &(r, v) in hidden.iter().chain(&hidden_spread) {
        st.place(r, v, true);
    }
    st.hidden = hidden;
    st.hidden_spread = hidden_spread;
    result.map(|x| (out, x))
}

//! Read-side queries over the cache indexes, used once per decision (never per node).

use super::{ClusterCache, TermKind};
use crate::compiled::Selector;
use crate::intern::Sym;
use crate::pod_info::{PodInfo, Term};

impl ClusterCache {
    /// Calls `f(node_slot, count)` for the placed pods matching `term` (namespaces and selector),
    /// grouped by node. A node may be reported more than once.
    pub(crate) fn for_each_term_match(&self, term: &Term, mut f: impl FnMut(u32, u32)) {
        if term.selector.nothing {
            return;
        }
        for &ns in &term.namespaces {
            self.for_each_selector_match(ns, &term.selector, &mut f);
        }
    }

    /// Calls `f(node_slot, count)` for placed pods in `ns` matching `sel`.
    pub(crate) fn for_each_selector_match(
        &self,
        ns: Sym,
        sel: &Selector,
        f: &mut impl FnMut(u32, u32),
    ) {
        if sel.nothing {
            return;
        }
        match sel.index_pair() {
            Some((k, v)) => {
                let Some(p) = self.postings.get(&(ns, k, v)) else {
                    return;
                };
                if sel.reqs.len() == 1 {
                    for (&n, &c) in &p.nodes {
                        f(n, c);
                    }
                } else {
                    for &ix in &p.pods {
                        if let Some(s) = self.pod_slot(ix) {
                            if sel.matches(&s.info.labels, &self.interner) {
                                f(s.node, 1);
                            }
                        }
                    }
                }
            }
            None => {
                let Some(set) = self.ns_pods.get(&ns) else {
                    return;
                };
                for &ix in set {
                    if let Some(s) = self.pod_slot(ix) {
                        if sel.matches(&s.info.labels, &self.interner) {
                            f(s.node, 1);
                        }
                    }
                }
            }
        }
    }

    /// Calls `f(term_id)` for each distinct term of placed pods, of one of `kinds`, that `pod`
    /// matches.
    pub(crate) fn for_each_existing_term_matching(
        &self,
        pod: &PodInfo,
        kinds: &[TermKind],
        mut f: impl FnMut(u32),
    ) {
        if kinds.iter().all(|k| self.term_kind_pods[*k as usize] == 0) {
            return;
        }
        let mut visit = |id: u32| {
            let t = &self.terms[id as usize];
            if t.total > 0
                && kinds.contains(&t.kind)
                && t.term.matches(pod.ns, &pod.labels, &self.interner)
            {
                f(id);
            }
        };
        for pair in &pod.labels.0 {
            if let Some(ids) = self.term_index.get(pair) {
                for &id in ids {
                    visit(id);
                }
            }
        }
        for &id in &self.generic_terms {
            visit(id);
        }
    }

    /// True if every node carries `key` with a value no other node has (e.g. the hostname
    /// label): then a node's topology domain for `key` is the node itself.
    #[inline]
    pub(crate) fn identity_topology(&self, key: Sym) -> bool {
        self.key_shared_domains.get(&key).copied().unwrap_or(0) == 0
            && self.key_nodes.get(&key).copied().unwrap_or(0) as usize == self.order.len()
    }

    /// The topology domain of node `src` for `key` (None if the node lacks the label).
    #[inline]
    pub(crate) fn domain_of(&self, src: u32, key: Sym) -> Option<u32> {
        let n = self.nodes.get(src as usize)?;
        let pos = n.labels.0.iter().position(|(k, _)| *k == key)?;
        n.domains.get(pos).copied()
    }

    /// Calls `f(node_slot)` once for every node sharing a `key` domain with any of `srcs`;
    /// `seen` is a reusable buffer.
    pub(crate) fn for_each_in_domains_of(
        &self,
        srcs: impl Iterator<Item = u32>,
        key: Sym,
        seen: &mut crate::intern::FxSet<u32>,
        mut f: impl FnMut(u32),
    ) {
        if self.identity_topology(key) {
            for src in srcs {
                if self.rank.get(src as usize).is_some_and(|r| *r != u32::MAX) {
                    f(src);
                }
            }
            return;
        }
        seen.clear();
        for src in srcs {
            if let Some(d) = self.domain_of(src, key) {
                if seen.insert(d) {
                    for &m in &self.domains[d as usize] {
                        f(m);
                    }
                }
            }
        }
    }
}

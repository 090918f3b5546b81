//! A bounded map that forgets its least recently used entry, as the `groupcache/lru` caches of
//! upstream's event correlator do (4096 entries each): a long-running component remembers the
//! recent events, never all of them.

use std::collections::{BTreeMap, HashMap};

/// At most `capacity` entries; reading or writing an entry makes it the most recent.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    capacity: usize,
    entries: HashMap<String, (V, u64)>,
    /// Use stamp → key, oldest first.
    order: BTreeMap<u64, String>,
    stamp: u64,
}

impl<V> Lru<V> {
    pub(crate) fn new(capacity: usize) -> Lru<V> {
        Lru {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            stamp: 0,
        }
    }

    /// The entry of `key`, made the most recent.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.stamp += 1;
        let (value, used) = self.entries.get_mut(key)?;
        self.order.remove(used);
        *used = self.stamp;
        self.order.insert(self.stamp, key.to_string());
        Some(value)
    }

    /// Sets `key`'s entry (the most recent); the least recently used goes when full.
    pub(crate) fn put(&mut self, key: String, value: V) {
        self.stamp += 1;
        if let Some((_, used)) = self.entries.get(&key) {
            self.order.remove(used);
        } else if self.entries.len() >= self.capacity {
            if let Some((_, oldest)) = self.order.pop_first() {
                self.entries.remove(&oldest);
            }
        }
        self.order.insert(self.stamp, key.clone());
        self.entries.insert(key, (value, self.stamp));
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let mut lru = Lru::new(2);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        assert_eq!(lru.get_mut("a"), Some(&mut 1));
        lru.put("c".into(), 3);
        assert_eq!(lru.get_mut("b"), None, "b was used least recently");
        assert_eq!(lru.get_mut("a"), Some(&mut 1));
        assert_eq!(lru.get_mut("c"), Some(&mut 3));
        assert_eq!(lru.len(), 2);
    }

    #[test]
    fn replacing_an_entry_does_not_evict() {
        let mut lru = Lru::new(2);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        lru.put("a".into(), 10);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get_mut("b"), Some(&mut 2));
        assert_eq!(lru.get_mut("a"), Some(&mut 10));
    }
}

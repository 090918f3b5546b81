//! Where a store key lives in etcd: the store's root (`/registry`, as the API server names its
//! keys) replaced by the etcd prefix (`--etcd-prefix`, default `/registry`), so
//! `/registry/core/pods/ns/p` is `<prefix>/core/pods/ns/p` in etcd.

use crate::{Error, Result};

/// The two-way mapping between store keys and etcd keys.
#[derive(Clone, Debug)]
pub(crate) struct KeyMap {
    // Shared, not copied: every write clones the map into its task.
    store_root: std::sync::Arc<str>,
    etcd_root: std::sync::Arc<str>,
}

impl KeyMap {
    pub(crate) fn new(store_root: &str, etcd_root: &str) -> KeyMap {
        KeyMap {
            store_root: store_root.trim_end_matches('/').into(),
            etcd_root: etcd_root.trim_end_matches('/').into(),
        }
    }

    /// The etcd key of a store key. Only keys under the store root (`<root>/...`) can be
    /// stored, so that every etcd key maps back to exactly one store key.
    pub(crate) fn to_etcd(&self, key: &str) -> Result<String> {
        match key.strip_prefix(&*self.store_root) {
            Some(rest) if rest.starts_with('/') => Ok(format!("{}{rest}", self.etcd_root)),
            _ => Err(Error::Io(format!(
                "key {key} is outside the store root {}/",
                self.store_root
            ))),
        }
    }

    /// The store key of an etcd key under [`KeyMap::etcd_prefix`]; None for anything else.
    pub(crate) fn to_store(&self, etcd_key: &[u8]) -> Option<String> {
        let key = std::str::from_utf8(etcd_key).ok()?;
        let rest = key.strip_prefix(&*self.etcd_root)?;
        rest.starts_with('/')
            .then(|| format!("{}{rest}", self.store_root))
    }

    /// The etcd prefix every stored key has (what the mirror lists and watches).
    pub(crate) fn etcd_prefix(&self) -> String {
        format!("{}/", self.etcd_root)
    }

    /// The key the replicas' compactors race on (outside the watched prefix, as upstream's
    /// `compact_rev_key` is).
    pub(crate) fn compaction_key(&self) -> String {
        format!("compact_rev_key{}", self.etcd_root)
    }
}

/// The end of etcd's range for every key starting with `prefix`: the prefix with its last
/// byte incremented (bytes of 0xff dropped first); `\0` (every key) for an empty prefix.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn registry_keys_move_under_the_etcd_prefix() {
        let keys = KeyMap::new("/registry", "/cluster-a");
        let etcd = keys.to_etcd("/registry/core/pods/ns/p").unwrap();
        assert_eq!(etcd, "/cluster-a/core/pods/ns/p");
        assert_eq!(
            keys.to_store(etcd.as_bytes()).as_deref(),
            Some("/registry/core/pods/ns/p")
        );
        assert_eq!(keys.etcd_prefix(), "/cluster-a/");
    }

    #[test]
    fn the_default_prefix_keeps_keys_as_they_are() {
        let keys = KeyMap::new("/registry", "/registry");
        assert_eq!(
            keys.to_etcd("/registry/core/nodes/n1").unwrap(),
            "/registry/core/nodes/n1"
        );
    }

    #[test]
    fn keys_outside_the_root_are_refused_not_aliased() {
        let keys = KeyMap::new("/registry", "/registry");
        assert!(keys.to_etcd("/other/x").is_err());
        assert!(keys.to_etcd("/registryx").is_err());
        assert_eq!(keys.to_store(b"/registryx/a"), None);
        assert_eq!(keys.to_store(b"compact_rev_key/registry"), None);
        assert_eq!(keys.to_store(&[0xff, 0xfe]), None);
    }

    #[test]
    fn prefix_end_bounds_the_prefix() {
        assert_eq!(prefix_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end(&[b'a', 0xff]), b"b".to_vec());
        assert_eq!(prefix_end(b""), vec![0]);
    }

    proptest! {
        #[test]
        fn every_storable_key_maps_back(rest in "(/[a-z0-9.-]{0,8}){1,4}", root in "(/[a-z]{1,6}){0,2}") {
            let keys = KeyMap::new("/registry", &root);
            let key = format!("/registry{rest}");
            let etcd = keys.to_etcd(&key).unwrap();
            prop_assert!(etcd.starts_with(&keys.etcd_prefix()));
            prop_assert_eq!(keys.to_store(etcd.as_bytes()), Some(key));
        }

        #[test]
        fn any_key_is_refused_or_maps_back(key in "\\PC{0,20}") {
            let keys = KeyMap::new("", "/t/1");
            if let Ok(etcd) = keys.to_etcd(&key) {
                prop_assert_eq!(keys.to_store(etcd.as_bytes()), Some(key));
            }
        }
    }
}

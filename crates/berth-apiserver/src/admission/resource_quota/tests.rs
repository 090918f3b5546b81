//! Charging quotas at admission: racing creates, dry runs, counting what the store holds.

use super::*;
use serde_json::json;
use std::sync::Arc;

fn rt(plural: &str) -> &'static ResourceType {
    registry::find("", "v1", plural).unwrap()
}

async fn put(store: &Store, plural: &str, obj: Value) {
    let key = path::key(rt(plural), Some("ns"), meta_str(&obj, "name"));
    store
        .create(&key, codec::encode_for(&obj, rt(plural)))
        .await
        .unwrap();
}

fn quota(name: &str, hard: Value) -> Value {
    let used: serde_json::Map<String, Value> = hard
        .as_object()
        .unwrap()
        .keys()
        .map(|k| (k.clone(), json!("0")))
        .collect();
    json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"hard": hard}, "status": {"hard": hard, "used": used}})
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

fn plugin(store: &Store) -> ResourceQuota {
    ResourceQuota {
        store: store.clone(),
        turns: NamespaceTurns::default(),
    }
}

async fn admit(p: &ResourceQuota, obj: &Value, dry_run: bool) -> ApiResult<()> {
    match p.charge_create(rt("pods"), obj, dry_run) {
        Some(charging) => charging.await,
        None => Ok(()),
    }
}

fn used(store: &Store, name: &str) -> Value {
    let list = namespace_objects::list(store, "", "resourcequotas", "ns").unwrap();
    let q = list.into_iter().find(|q| meta_str(q, "name") == name);
    q.unwrap()["status"]["used"].clone()
}

#[tokio::test]
async fn a_namespace_without_quotas_has_nothing_to_charge() {
    let store = Store::memory();
    let p = plugin(&store);
    assert!(p.charge_create(rt("pods"), &pod("a"), false).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_ten_racing_creates_exactly_the_three_that_fit_are_admitted() {
    let store = Store::memory();
    put(&store, "resourcequotas", quota("q", json!({"pods": "3"}))).await;
    let p = Arc::new(plugin(&store));
    let mut tasks = Vec::new();
    for i in 0..10 {
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            admit(&p, &pod(&format!("p{i}")), false).await
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(()) => admitted += 1,
            Err(ApiError::Forbidden(m)) => assert!(
                m.ends_with("exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3"),
                "{m}"
            ),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(admitted, 3);
    assert_eq!(used(&store, "q"), json!({"pods": "3"}));
}

#[tokio::test]
async fn the_charge_is_the_larger_of_the_status_and_the_stored_objects() {
    let store = Store::memory();
    // Two pods stored before the quota controller counted them: status says 0.
    put(&store, "resourcequotas", quota("q", json!({"pods": "3"}))).await;
    put(&store, "pods", pod("old1")).await;
    put(&store, "pods", pod("old2")).await;
    let p = plugin(&store);
    admit(&p, &pod("a"), false).await.unwrap();
    assert_eq!(used(&store, "q"), json!({"pods": "3"}));
    let refused = admit(&p, &pod("b"), false).await.unwrap_err();
    assert!(matches!(refused, ApiError::Forbidden(_)), "{refused:?}");
}

#[tokio::test]
async fn a_dry_run_is_checked_but_charges_nothing() {
    let store = Store::memory();
    put(&store, "resourcequotas", quota("q", json!({"pods": "1"}))).await;
    let p = plugin(&store);
    admit(&p, &pod("a"), true).await.unwrap();
    admit(&p, &pod("a"), true).await.unwrap();
    assert_eq!(used(&store, "q"), json!({"pods": "0"}));
    admit(&p, &pod("a"), false).await.unwrap();
    assert_eq!(used(&store, "q"), json!({"pods": "1"}));
    assert!(admit(&p, &pod("b"), true).await.is_err());
}

#[tokio::test]
async fn every_quota_that_counts_the_object_is_charged_and_one_refusal_charges_none() {
    let store = Store::memory();
    put(
        &store,
        "resourcequotas",
        quota("pods", json!({"pods": "5"})),
    )
    .await;
    put(
        &store,
        "resourcequotas",
        quota("best-effort", json!({"pods": "1"})),
    )
    .await;
    put(
        &store,
        "resourcequotas",
        quota("other", json!({"services": "1"})),
    )
    .await;
    let p = plugin(&store);
    admit(&p, &pod("a"), false).await.unwrap();
    assert_eq!(used(&store, "pods"), json!({"pods": "1"}));
    assert_eq!(used(&store, "best-effort"), json!({"pods": "1"}));
    assert_eq!(used(&store, "other"), json!({"services": "0"}));
    let refused = admit(&p, &pod("b"), false).await.unwrap_err();
    assert!(
        refused.message().contains("exceeded quota: best-effort"),
        "{refused:?}"
    );
    assert_eq!(used(&store, "pods"), json!({"pods": "1"}));
}

#[tokio::test]
async fn a_charge_over_a_quota_changed_since_it_was_read_conflicts() {
    let store = Store::memory();
    put(&store, "resourcequotas", quota("q", json!({"pods": "2"}))).await;
    let p = plugin(&store);
    // Decide on the quota as read, then let another server charge it first.
    let quotas = namespace_objects::list(&store, "", "resourcequotas", "ns").unwrap();
    let stale = p.decide(rt("pods"), &pod("a"), &quotas).unwrap();
    admit(&p, &pod("other-server"), false).await.unwrap();
    let c = &stale[0];
    let key = path::key(rt("resourcequotas"), Some("ns"), &c.name);
    let write = store
        .update(
            &key,
            codec::encode_for(&c.quota, rt("resourcequotas")),
            Some(c.revision),
        )
        .await;
    assert!(matches!(write, Err(berth_store::Error::Conflict { .. })));
    // The next charge reads the quota again and counts the other server's charge.
    admit(&p, &pod("a"), false).await.unwrap();
    assert_eq!(used(&store, "q"), json!({"pods": "2"}));
    assert!(admit(&p, &pod("b"), false).await.is_err());
}

/// A store where another API server charges each quota right before this one's next
/// `races` quota writes: each of those writes then finds the quota changed.
struct Racing {
    inner: Store,
    races: std::sync::atomic::AtomicUsize,
}

impl berth_store::Backend for Racing {
    fn current_revision(&self) -> berth_store::Revision {
        self.inner.current_revision()
    }
    fn compacted_revision(&self) -> berth_store::Revision {
        self.inner.compacted_revision()
    }
    fn get(&self, key: &str) -> berth_store::Result<Option<berth_store::KeyValue>> {
        self.inner.get(key)
    }
    fn range(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        at: Option<berth_store::Revision>,
    ) -> berth_store::Result<berth_store::RangeResult> {
        self.inner.range(prefix, start_after, limit, at)
    }
    fn create<'a>(
        &'a self,
        key: &'a str,
        value: bytes::Bytes,
    ) -> berth_store::Pending<'a, berth_store::KeyValue> {
        Box::pin(self.inner.create(key, value))
    }
    fn update<'a>(
        &'a self,
        key: &'a str,
        value: bytes::Bytes,
        expected: Option<berth_store::Revision>,
    ) -> berth_store::Pending<'a, berth_store::KeyValue> {
        use std::sync::atomic::Ordering;
        Box::pin(async move {
            let race = key.contains("/resourcequotas/")
                && self
                    .races
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            if race {
                let kv = self.inner.get(key)?.expect("the quota");
                let mut q: Value = serde_json::from_slice(&kv.value).unwrap();
                let n: i64 = q["status"]["used"]["pods"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                q["status"]["used"]["pods"] = json!((n + 1).to_string());
                let other = bytes::Bytes::from(serde_json::to_vec(&q).unwrap());
                self.inner.update(key, other, None).await?;
            }
            self.inner.update(key, value, expected).await
        })
    }
    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected: Option<berth_store::Revision>,
    ) -> berth_store::Pending<'a, berth_store::KeyValue> {
        Box::pin(self.inner.delete(key, expected))
    }
    fn watch(
        &self,
        prefix: &str,
        after: berth_store::Revision,
    ) -> berth_store::Result<berth_store::Watch> {
        self.inner.watch(prefix, after)
    }
    fn compact(&self, revision: berth_store::Revision) -> berth_store::Result<()> {
        self.inner.compact(revision)
    }
    fn close(&self) {
        self.inner.close()
    }
}

async fn racing_store(hard: i64, races: usize) -> Store {
    let inner = Store::memory();
    put(
        &inner,
        "resourcequotas",
        quota("q", json!({"pods": hard.to_string()})),
    )
    .await;
    Store::from_backend(Arc::new(Racing {
        inner,
        races: races.into(),
    }))
}

#[tokio::test]
async fn a_charge_that_finds_its_quota_changed_decides_again_on_the_new_one() {
    // Another server charges one pod between our read and our write.
    let store = racing_store(3, 1).await;
    let p = plugin(&store);
    admit(&p, &pod("a"), false).await.unwrap();
    assert_eq!(used(&store, "q"), json!({"pods": "2"}));
    // Of two units, the other server takes one and ours the last.
    let store = racing_store(2, 1).await;
    let p = plugin(&store);
    admit(&p, &pod("a"), false).await.unwrap();
    assert_eq!(used(&store, "q"), json!({"pods": "2"}));
    // Of one unit, the other server takes it: decided again, ours is refused.
    let store = racing_store(1, 1).await;
    let p = plugin(&store);
    let refused = admit(&p, &pod("a"), false).await.unwrap_err();
    assert!(
        refused
            .message()
            .ends_with("exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_quota_that_keeps_changing_fails_the_create_with_the_conflict() {
    let store = racing_store(100, RETRIES + 1).await;
    let p = plugin(&store);
    let e = admit(&p, &pod("a"), false).await.unwrap_err();
    assert_eq!(e.code(), 409, "{e:?}");
    assert_eq!(
        e.message(),
        "Operation cannot be fulfilled on resourcequotas \"q\": the object has been modified; please apply your changes to the latest version and try again"
    );
    // Each attempt lost to the other server's charge; none of ours stuck.
    assert_eq!(
        used(&store, "q"),
        json!({"pods": (RETRIES + 1).to_string()})
    );
}

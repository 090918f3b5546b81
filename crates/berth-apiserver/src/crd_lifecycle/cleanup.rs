//! Deleting a CRD: it is marked deleting (held by [`CLEANUP_FINALIZER`], `Terminating`), its
//! objects are deleted (watchers see each go), then the finalizer is removed and the CRD is
//! gone, as upstream's `finalizer` controller in `apiextensions-apiserver` does. berth runs it
//! right after the write that marked the CRD, and again for any CRD found marked when a server
//! starts following the store.

use crate::apiextensions::{CLEANUP_FINALIZER, CRD_PREFIX};
use crate::codec::encode;
use crate::context::Ctx;
use crate::follow::StoreFollower;
use serde_json::Value;

/// Reads the CRDs again after a write of one (so the next request finds its kind), and
/// finishes the deletion of `name` if that write marked it deleting.
pub async fn after_crd_write(ctx: &Ctx, name: &str) {
    ctx.custom.reload(&ctx.store);
    let key = format!("{CRD_PREFIX}{name}");
    let Ok(Some(kv)) = ctx.store.get(&key) else {
        return;
    };
    let Ok(crd) = serde_json::from_slice::<Value>(&kv.value) else {
        return;
    };
    let marked = crd["metadata"].get("deletionTimestamp").is_some();
    let held = crd["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == CLEANUP_FINALIZER));
    if marked && held {
        finish_deletion(ctx, &key, crd, kv.mod_revision).await;
    }
}

async fn finish_deletion(ctx: &Ctx, key: &str, mut crd: Value, mut revision: i64) {
    let group = crd["spec"]["group"].as_str().unwrap_or("").to_string();
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if !group.is_empty() && !plural.is_empty() {
        let prefix = format!("/registry/{group}/{plural}/");
        if let Ok(listed) = ctx.store.range(&prefix, None, 0, None) {
            for kv in listed.kvs {
                if let Err(e) = ctx.store.delete(&kv.key, None).await {
                    tracing::warn!(error = %e, key = kv.key, "deleting a custom resource failed");
                }
            }
        }
    }
    for _ in 0..16 {
        let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        let remaining: Vec<Value> = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|f| *f != CLEANUP_FINALIZER)
            .cloned()
            .collect();
        let written = if remaining.is_empty() {
            ctx.store.delete(key, Some(revision)).await.map(|_| ())
        } else {
            meta.insert("finalizers".into(), Value::Array(remaining));
            ctx.store
                .update(key, encode(&crd), Some(revision))
                .await
                .map(|_| ())
        };
        match written {
            Ok(()) => break,
            Err(berth_store::Error::Conflict { .. }) => {
                let Ok(Some(kv)) = ctx.store.get(key) else {
                    return;
                };
                let Ok(fresh) = serde_json::from_slice::<Value>(&kv.value) else {
                    return;
                };
                crd = fresh;
                revision = kv.mod_revision;
            }
            Err(e) => {
                tracing::warn!(error = %e, key, "removing the CRD cleanup finalizer failed");
                return;
            }
        }
    }
    ctx.custom.reload(&ctx.store);
}

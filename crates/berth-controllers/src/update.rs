//! Writes with upstream's verbs. Upstream's controllers change an object's `status` with
//! `update` (PUT `.../status`) and their own objects' metadata with `update`, and their
//! bootstrap roles grant exactly that; berth's drivers decide a change as a merge patch, so
//! these helpers read the object, apply the patch to it and PUT the result. A
//! `metadata.resourceVersion` in the patch stays a precondition: the PUT carries it, and a
//! newer object answers 409.

use kube::api::{Api, PostParams};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Applies the JSON merge patch `patch` (RFC 7386) to `target`.
pub fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Value::Object(into) = target else {
        return;
    };
    for (key, value) in fields {
        if value.is_null() {
            into.remove(key);
        } else {
            merge(into.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Reads `name`, applies `patch` and PUTs the whole object (`update`).
pub async fn update<K: Object>(api: &Api<K>, name: &str, patch: &Value) -> Result<(), kube::Error> {
    let object = patched(api, name, patch).await?;
    let object: K = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
    api.replace(name, &PostParams::default(), &object)
        .await
        .map(|_| ())
}

/// Reads `name`, applies `patch` and PUTs it to the `status` subresource (`update` on
/// `<resource>/status`).
pub async fn update_status<K: Object>(
    api: &Api<K>,
    name: &str,
    patch: &Value,
) -> Result<(), kube::Error> {
    let object = patched(api, name, patch).await?;
    let object: K = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
    api.replace_status(name, &PostParams::default(), &object)
        .await
        .map(|_| ())
}

/// What the helpers read and write: any API object.
pub trait Object: Clone + std::fmt::Debug + Serialize + DeserializeOwned {}
impl<K: Clone + std::fmt::Debug + Serialize + DeserializeOwned> Object for K {}

async fn patched<K: Object>(api: &Api<K>, name: &str, patch: &Value) -> Result<Value, kube::Error> {
    let current = api.get(name).await?;
    let mut object = serde_json::to_value(&current).map_err(kube::Error::SerdeError)?;
    merge(&mut object, patch);
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_replaces_adds_and_removes_as_rfc_7386() {
        let mut target = json!({"metadata": {"name": "d", "resourceVersion": "5",
                                             "annotations": {"a": "1", "b": "2"}},
                                "spec": {"replicas": 3}, "status": {"replicas": 1, "old": true}});
        merge(
            &mut target,
            &json!({"metadata": {"resourceVersion": "4", "annotations": {"b": null, "c": "3"}},
                    "status": {"replicas": 2, "old": null, "conditions": [{"type": "A"}]}}),
        );
        assert_eq!(
            target,
            json!({"metadata": {"name": "d", "resourceVersion": "4",
                                "annotations": {"a": "1", "c": "3"}},
                   "spec": {"replicas": 3}, "status": {"replicas": 2, "conditions": [{"type": "A"}]}})
        );
    }

    #[test]
    fn a_patch_over_a_scalar_makes_an_object() {
        let mut target = json!({"status": null});
        merge(&mut target, &json!({"status": {"x": 1}}));
        assert_eq!(target, json!({"status": {"x": 1}}));
    }
}

//! ControllerRevisions (apps/v1): the pod templates a StatefulSet or DaemonSet has had, named
//! `<owner>-<hash of the template>` and numbered, as upstream's `controller/history`. A template
//! seen before gets its old revision back with the next number (a rollback); revisions beyond
//! `revisionHistoryLimit` that no pod uses are deleted, oldest first. Pure: what to write.

use crate::owned_pods::Owner;
use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The label naming a pod's (and a revision's) revision.
pub const REVISION_HASH_LABEL: &str = "controller-revision-hash";

/// What keeps an owner's revisions current.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RevisionPlan {
    /// The revision of the current template: its name, hash and number.
    pub name: String,
    pub hash: String,
    pub number: i64,
    /// A revision to create for it.
    pub create: Option<Value>,
    /// An existing revision of the same template to renumber: (name, new number).
    pub renumber: Option<(String, i64)>,
    /// Old revisions to delete.
    pub delete: Vec<String>,
}

/// Upstream's `rand.SafeEncodeString` alphabet (no vowels, no look-alike digits).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The hash of a pod template, as a name-safe string (FNV-1a over its JSON).
pub fn template_hash(template: &Value) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in template.to_string().bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string()
        .bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// The revision's `data`: the template as a patch that replaces the owner's.
pub fn revision_data(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(o) = t.as_object_mut() {
        o.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": t}})
}

/// The template a revision recorded.
pub fn revision_template(revision: &ControllerRevision) -> Option<Value> {
    let data = serde_json::to_value(revision.data.as_ref()?).ok()?;
    let mut t = data.get("spec")?.get("template")?.clone();
    if let Some(o) = t.as_object_mut() {
        o.remove("$patch");
    }
    Some(t)
}

/// Plans the revisions of `owner` whose template is now `template`. `labels` go on a new
/// revision (the template's, so that the owner's selector finds it); `in_use` are revision names
/// pods still carry; at most `history_limit` unused old revisions are kept.
pub fn plan(
    owner: &Owner,
    namespace: &str,
    template: &Value,
    labels: &BTreeMap<String, String>,
    existing: &[&ControllerRevision],
    history_limit: i64,
    in_use: &BTreeSet<String>,
) -> RevisionPlan {
    let hash = template_hash(template);
    let name = format!("{}-{hash}", owner.name);
    let max = existing.iter().map(|r| r.revision).max().unwrap_or(0);
    let mut out = RevisionPlan {
        name: name.clone(),
        hash: hash.clone(),
        ..RevisionPlan::default()
    };
    match existing
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(&name))
    {
        Some(r) if r.revision == max => out.number = r.revision,
        Some(_) => {
            out.number = max + 1;
            out.renumber = Some((name.clone(), max + 1));
        }
        None => {
            out.number = max + 1;
            let mut labels = labels.clone();
            labels.insert(REVISION_HASH_LABEL.into(), hash);
            out.create = Some(json!({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": name, "namespace": namespace, "labels": labels,
                             "ownerReferences": [owner.reference()]},
                "data": revision_data(template),
                "revision": max + 1,
            }));
        }
    }
    let mut old: Vec<&&ControllerRevision> = existing
        .iter()
        .filter(|r| {
            let n = r.metadata.name.as_deref().unwrap_or("");
            n != name && !in_use.contains(n)
        })
        .collect();
    old.sort_by_key(|r| r.revision);
    let excess = old.len().saturating_sub(history_limit.max(0) as usize);
    out.delete = old
        .into_iter()
        .take(excess)
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: Owner = Owner {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: "web",
        uid: "u",
    };

    fn revision(name: &str, number: i64) -> ControllerRevision {
        serde_json::from_value(json!({"metadata": {"name": name}, "revision": number})).unwrap()
    }

    fn template(image: &str) -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "c", "image": image}]}})
    }

    #[test]
    fn the_hash_is_stable_name_safe_and_differs_by_template() {
        let a = template_hash(&template("nginx:1"));
        assert_eq!(a, template_hash(&template("nginx:1")));
        assert_ne!(a, template_hash(&template("nginx:2")));
        assert!(a.bytes().all(|b| ALPHANUMS.contains(&b)));
    }

    #[test]
    fn a_new_template_gets_the_next_revision_with_its_data_and_labels() {
        let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
        let r1 = revision("web-x", 1);
        let p = plan(
            &OWNER,
            "ns",
            &template("nginx:2"),
            &labels,
            &[&r1],
            10,
            &BTreeSet::new(),
        );
        assert_eq!(p.number, 2);
        let created = p.create.unwrap();
        assert_eq!(created["revision"], 2);
        assert_eq!(created["metadata"]["name"], p.name);
        assert_eq!(created["metadata"]["labels"]["app"], "web");
        assert_eq!(created["metadata"]["labels"][REVISION_HASH_LABEL], p.hash);
        assert_eq!(created["data"]["spec"]["template"]["$patch"], "replace");
        let typed: ControllerRevision = serde_json::from_value(created).unwrap();
        assert_eq!(revision_template(&typed), Some(template("nginx:2")));
    }

    #[test]
    fn the_latest_template_keeps_its_revision_and_an_older_one_is_renumbered() {
        let t = template("nginx:1");
        let name = format!("web-{}", template_hash(&t));
        let (r1, r2) = (revision(&name, 1), revision("web-y", 2));
        let p = plan(
            &OWNER,
            "ns",
            &t,
            &BTreeMap::new(),
            &[&r1],
            10,
            &BTreeSet::new(),
        );
        assert_eq!((p.number, p.create, p.renumber), (1, None, None));
        let p = plan(
            &OWNER,
            "ns",
            &t,
            &BTreeMap::new(),
            &[&r1, &r2],
            10,
            &BTreeSet::new(),
        );
        assert_eq!(p.renumber, Some((name, 3)));
    }

    #[test]
    fn unused_revisions_beyond_the_history_limit_go_oldest_first() {
        let rs: Vec<ControllerRevision> =
            (1..=4).map(|i| revision(&format!("web-{i}"), i)).collect();
        let refs: Vec<&ControllerRevision> = rs.iter().collect();
        let in_use = BTreeSet::from(["web-1".to_string()]);
        let p = plan(
            &OWNER,
            "ns",
            &template("new"),
            &BTreeMap::new(),
            &refs,
            1,
            &in_use,
        );
        assert_eq!(p.delete, vec!["web-2".to_string(), "web-3".to_string()]);
    }
}

//! Rows of RBAC kinds: roles and cluster roles print upstream's default `NAME CREATED AT`
//! (their storage has no printer of its own); bindings print `NAME ROLE AGE` and, wide, the
//! users, groups and service accounts they bind.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, arr_at, col, str_at, wide, Column, AGE, NAME};

pub(super) const ROLE_COLUMNS: &[Column] = &[NAME, col("Created At", "date", super::AGE_DESC)];

pub(super) fn role_cells(obj: &Value) -> Vec<Value> {
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(str_at(obj, "/metadata/creationTimestamp")),
    ]
}

pub(super) const ROLE_BINDING_COLUMNS: &[Column] = &[
    NAME,
    col("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable."),
    AGE,
    wide("Users", "string", "Users in the roleBinding"),
    wide("Groups", "string", "Groups in the roleBinding"),
    wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
];

pub(super) fn role_binding_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for s in arr_at(obj, "/subjects") {
        let name = str_at(s, "/name").to_string();
        match str_at(s, "/kind") {
            "User" => users.push(name),
            "Group" => groups.push(name),
            "ServiceAccount" => accounts.push(format!("{}/{name}", str_at(s, "/namespace"))),
            _ => {}
        }
    }
    vec![
        json!(str_at(obj, "/metadata/name")),
        json!(format!(
            "{}/{}",
            str_at(obj, "/roleRef/kind"),
            str_at(obj, "/roleRef/name")
        )),
        json!(age(obj, now)),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(accounts.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_row_as_kubectl_prints_it() {
        let now = "2026-01-01T00:10:00Z".parse().unwrap();
        let b = json!({"metadata": {"name": "b", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "s", "namespace": "kube-system"},
                         {"kind": "User", "name": "bob"}, {"kind": "Group", "name": "devs"}]});
        assert_eq!(
            role_binding_cells(&b, now),
            vec![
                json!("b"),
                json!("ClusterRole/view"),
                json!("10m"),
                json!("alice, bob"),
                json!("devs"),
                json!("kube-system/s")
            ]
        );
        assert_eq!(
            ROLE_BINDING_COLUMNS.len(),
            role_binding_cells(&b, now).len()
        );
    }

    #[test]
    fn role_row_shows_the_creation_time() {
        let r =
            json!({"metadata": {"name": "system:x", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(
            role_cells(&r),
            vec![json!("system:x"), json!("2026-01-01T00:00:00Z")]
        );
    }
}

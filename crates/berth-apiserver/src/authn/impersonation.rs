//! `Impersonate-User`, `Impersonate-Group` and `Impersonate-Uid`: a user acting as another,
//! allowed only with the `impersonate` verb on each `users`, `groups`, `uids` (or
//! `serviceaccounts`) they name, as upstream's impersonation filter checks.

use crate::authorizer::Attributes;
use crate::error::ApiResult;
use crate::user::{UserInfo, SYSTEM_AUTHENTICATED};
use axum::http::HeaderMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";

/// Whether the request asks to impersonate anyone.
pub fn requested(headers: &HeaderMap) -> bool {
    [USER, GROUP, UID].iter().any(|h| headers.contains_key(*h))
}

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// The user `requester` acts as, once `check` allowed every impersonation asked for (it
/// returns the 403 of the first one denied). Groups or a uid without a user is a 400 upstream;
/// here it is refused the same way.
pub fn impersonate(
    requester: &UserInfo,
    headers: &HeaderMap,
    check: impl Fn(&Attributes<'_>) -> ApiResult<()>,
) -> ApiResult<UserInfo> {
    let Some(name) = values(headers, USER).first().map(|s| s.to_string()) else {
        return Err(crate::error::ApiError::BadRequest(
            "requested impersonation of groups or a uid without impersonating a user".into(),
        ));
    };
    let ask = |resource: &str, group: &str, namespace: &str, target: &str| {
        check(&Attributes {
            user: requester,
            verb: "impersonate",
            api_group: group,
            resource,
            subresource: "",
            namespace,
            name: target,
            path: "",
            field_selector: "",
        })
    };
    let mut groups: Vec<String> = Vec::new();
    match name
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, sa)) => {
            ask("serviceaccounts", "", ns, sa)?;
            groups.push("system:serviceaccounts".into());
            groups.push(format!("system:serviceaccounts:{ns}"));
        }
        None => {
            ask("users", "", "", &name)?;
        }
    }
    for g in values(headers, GROUP) {
        ask("groups", "", "", g)?;
        groups.push(g.to_string());
    }
    let uid = match values(headers, UID).first() {
        Some(uid) => {
            ask("uids", "authentication.k8s.io", "", uid)?;
            uid.to_string()
        }
        None => String::new(),
    };
    if !groups.iter().any(|g| g == SYSTEM_AUTHENTICATED) {
        groups.push(SYSTEM_AUTHENTICATED.into());
    }
    Ok(UserInfo {
        name,
        uid,
        groups,
        ..UserInfo::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn each_name_needs_the_impersonate_verb() {
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        let h = headers(&[("impersonate-user", "bob"), ("impersonate-group", "qa")]);
        assert!(requested(&h));
        // Allowed to impersonate bob but not the group qa.
        let only_users = |a: &Attributes<'_>| {
            if a.resource == "users" {
                Ok(())
            } else {
                Err(ApiError::Forbidden(a.resource.to_string()))
            }
        };
        assert!(matches!(
            impersonate(&alice, &h, only_users),
            Err(ApiError::Forbidden(r)) if r == "groups"
        ));
        let bob = impersonate(&alice, &h, |_| Ok(())).unwrap();
        assert_eq!(bob.name, "bob");
        assert_eq!(bob.groups, vec!["qa", SYSTEM_AUTHENTICATED]);
    }

    #[test]
    fn service_accounts_are_asked_for_by_namespace_and_get_their_groups() {
        let h = headers(&[("impersonate-user", "system:serviceaccount:ci:robot")]);
        let sa = impersonate(&UserInfo::admin(), &h, |a| {
            assert_eq!(
                (a.resource, a.namespace, a.name),
                ("serviceaccounts", "ci", "robot")
            );
            Ok(())
        })
        .unwrap();
        assert_eq!(
            sa.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ci",
                SYSTEM_AUTHENTICATED
            ]
        );
        assert!(!requested(&HeaderMap::new()));
    }
}

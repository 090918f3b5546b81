//! The tokens controller (upstream `pkg/controller/serviceaccount/tokens_controller.go`): a
//! Secret of type `kubernetes.io/service-account-token` annotated with
//! `kubernetes.io/service-account.name` gets a legacy token for that ServiceAccount in
//! `data.token`, with `data.ca.crt` and `data.namespace`, and the account's uid in the
//! `kubernetes.io/service-account.uid` annotation. A token Secret whose account was deleted (its
//! recorded uid no longer exists) is deleted, as upstream does.
//!
//! The engine ([`decide`]) says what each Secret needs; the driver ([`run`]) watches Secrets and
//! ServiceAccounts and carries it out. Signing is the API server's: the driver is handed a
//! [`Signer`] the way upstream hands kube-controller-manager the private key.

mod driver;

pub use driver::{run, Queues};

use std::collections::HashMap;
use std::sync::Arc;

/// The Secret type of legacy ServiceAccount tokens.
pub const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
pub const ANNOTATION_NAME: &str = "kubernetes.io/service-account.name";
pub const ANNOTATION_UID: &str = "kubernetes.io/service-account.uid";

/// Signs a legacy token: `(namespace, account name, account uid, secret name) -> token`.
pub type Signer = Arc<dyn Fn(&str, &str, &str, &str) -> Result<String, String> + Send + Sync>;

/// A token Secret as the controller sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSecret {
    pub namespace: String,
    pub name: String,
    /// The account it is for (the name annotation).
    pub account: String,
    /// The account uid annotation, once set.
    pub account_uid: Option<String>,
    /// Whether `token`, `ca.crt` and `namespace` are all in its data.
    pub filled: bool,
}

/// What a token Secret needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Sign a token for the account with this uid and fill the Secret's data.
    Fill { account_uid: String },
    /// Its account is gone: delete the Secret.
    Delete,
}

/// What each Secret needs, given the uid of every ServiceAccount by (namespace, name). A
/// Secret whose account does not exist yet and never had a uid waits for it.
pub fn decide(
    secrets: &[TokenSecret],
    accounts: &HashMap<(String, String), String>,
) -> Vec<(TokenSecret, Decision)> {
    let mut out = Vec::new();
    for s in secrets {
        let uid = accounts.get(&(s.namespace.clone(), s.account.clone()));
        let decision = match (uid, &s.account_uid) {
            (Some(uid), Some(recorded)) if uid != recorded => Decision::Delete,
            (None, Some(_)) => Decision::Delete,
            (None, None) => continue,
            (Some(uid), _) if !s.filled || s.account_uid.is_none() => Decision::Fill {
                account_uid: uid.clone(),
            },
            _ => continue,
        };
        out.push((s.clone(), decision));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, account: &str, uid: Option<&str>, filled: bool) -> TokenSecret {
        TokenSecret {
            namespace: "ci".into(),
            name: name.into(),
            account: account.into(),
            account_uid: uid.map(str::to_string),
            filled,
        }
    }

    #[test]
    fn new_secrets_are_filled_and_orphans_deleted() {
        let accounts: HashMap<(String, String), String> =
            [(("ci".to_string(), "builder".to_string()), "u1".to_string())].into();
        let secrets = [
            secret("new", "builder", None, false),
            secret("done", "builder", Some("u1"), true),
            secret("waiting", "later", None, false),
            secret("orphan", "gone", Some("u9"), true),
            secret("recreated", "builder", Some("u0"), true),
        ];
        let got: Vec<(String, Decision)> = decide(&secrets, &accounts)
            .into_iter()
            .map(|(s, d)| (s.name, d))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "new".to_string(),
                    Decision::Fill {
                        account_uid: "u1".into()
                    }
                ),
                ("orphan".to_string(), Decision::Delete),
                ("recreated".to_string(), Decision::Delete),
            ]
        );
    }
}

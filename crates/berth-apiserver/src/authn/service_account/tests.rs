use super::*;
use chrono::TimeZone;
use proptest::prelude::*;
use std::sync::OnceLock;

/// One key for all tests: RSA generation is slow.
fn keys() -> Arc<Keys> {
    static KEYS: OnceLock<Arc<Keys>> = OnceLock::new();
    KEYS.get_or_init(|| Arc::new(Keys::generate_in_memory().unwrap()))
        .clone()
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
}

fn audiences() -> Vec<String> {
    vec![ISSUER.to_string()]
}

fn bound(pod: Option<(&str, &str)>, audiences: Vec<String>) -> Claims {
    Claims::bound(BoundToken {
        namespace: "kube-system",
        service_account: Ref {
            name: "descheduler-sa".into(),
            uid: "sa-uid".into(),
        },
        audiences,
        now: at(0),
        expiration_seconds: 3600,
        warn_after_seconds: None,
        bound: pod.map(|(name, uid)| BoundObject::Pod {
            name: name.into(),
            uid: uid.into(),
        }),
        node: pod.map(|_| Ref {
            name: "node-1".into(),
            uid: "node-uid".into(),
        }),
        jti: "jti-1".into(),
    })
}

#[test]
fn bound_claims_are_upstreams() {
    let c = bound(Some(("p", "pod-uid")), audiences());
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["iss"], ISSUER);
    assert_eq!(v["sub"], "system:serviceaccount:kube-system:descheduler-sa");
    assert_eq!(v["aud"], serde_json::json!([ISSUER]));
    assert_eq!(v["exp"], 1_800_003_600i64);
    assert_eq!(v["iat"], 1_800_000_000i64);
    assert_eq!(v["nbf"], 1_800_000_000i64);
    assert_eq!(v["jti"], "jti-1");
    let k = &v["kubernetes.io"];
    assert_eq!(k["namespace"], "kube-system");
    assert_eq!(
        k["serviceaccount"],
        serde_json::json!({"name": "descheduler-sa", "uid": "sa-uid"})
    );
    assert_eq!(k["pod"], serde_json::json!({"name": "p", "uid": "pod-uid"}));
    assert_eq!(
        k["node"],
        serde_json::json!({"name": "node-1", "uid": "node-uid"})
    );
    assert!(k.get("secret").is_none());
}

#[test]
fn signed_tokens_verify_and_others_do_not() {
    let c = bound(None, audiences());
    let token = keys().sign(&c).unwrap();
    assert_eq!(keys().verify_signature(&token), Some(c));
    let other = Keys::generate_in_memory().unwrap();
    assert_eq!(other.verify_signature(&token), None);
    // A flipped payload breaks the signature.
    let mut parts: Vec<&str> = token.split('.').collect();
    let forged = keys().sign(&bound(None, vec!["other".into()])).unwrap();
    parts[1] = forged.split('.').nth(1).unwrap();
    assert_eq!(keys().verify_signature(&parts.join(".")), None);
}

#[test]
fn expiry_and_audience_are_checked_against_now() {
    let c = bound(None, audiences());
    assert!(c.check(at(3599), &audiences()).is_ok());
    assert_eq!(c.check(at(3600), &audiences()), Err(Rejected::Expired));
    assert_eq!(c.check(at(-120), &audiences()), Err(Rejected::NotYetValid));
    let wrong = bound(None, vec!["vault".into()]);
    assert_eq!(
        wrong.check(at(1), &audiences()),
        Err(Rejected::Audience(vec!["vault".into()]))
    );
    let foreign = Claims {
        iss: "https://elsewhere".into(),
        ..c.clone()
    };
    assert_eq!(foreign.check(at(1), &audiences()), Err(Rejected::Issuer));
}

#[test]
fn the_user_of_a_pod_bound_token() {
    let s = bound(Some(("p", "pod-uid")), audiences())
        .check(at(1), &audiences())
        .unwrap();
    let u = s.user();
    assert_eq!(u.name, "system:serviceaccount:kube-system:descheduler-sa");
    assert_eq!(u.uid, "sa-uid");
    assert_eq!(
        u.groups,
        vec![
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
            "system:authenticated"
        ]
    );
    assert_eq!(u.extra[EXTRA_POD_NAME], vec!["p"]);
    assert_eq!(u.extra[EXTRA_POD_UID], vec!["pod-uid"]);
    assert_eq!(u.extra[EXTRA_NODE_NAME], vec!["node-1"]);
    assert_eq!(u.extra[EXTRA_CREDENTIAL_ID], vec!["JTI=jti-1"]);
}

#[test]
fn legacy_claims_have_no_expiry_or_audience() {
    let sa = Ref {
        name: "builder".into(),
        uid: "u1".into(),
    };
    let c = Claims::legacy("ci", &sa, "builder-token");
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["iss"], LEGACY_ISSUER);
    assert_eq!(
        v["kubernetes.io/serviceaccount/secret.name"],
        "builder-token"
    );
    assert!(v.get("exp").is_none() && v.get("aud").is_none());
    let s = c.check(at(10_000_000), &audiences()).unwrap();
    assert_eq!(s.legacy_secret.as_deref(), Some("builder-token"));
    assert_eq!(s.user().name, "system:serviceaccount:ci:builder");
    let incomplete = Claims {
        legacy_service_account_name: None,
        ..c
    };
    assert_eq!(
        incomplete.check(at(0), &audiences()),
        Err(Rejected::Incomplete)
    );
}

fn verifier(store: Store, now: i64) -> Verifier {
    Verifier::new(keys(), store, Clock::starting_at(at(now)), audiences())
}

async fn put(store: &Store, plural: &str, ns: Option<&str>, obj: Value) {
    let rt = berth_api::registry::find("", "v1", plural).unwrap();
    let key = path::key(rt, ns, meta_str(&obj, "name"));
    store
        .create(&key, crate::codec::encode(&obj))
        .await
        .unwrap();
}

/// A store holding ServiceAccount `kube-system/descheduler-sa` and its pod `p`.
async fn account_with_pod() -> Store {
    let store = Store::memory();
    put(
        &store,
        "serviceaccounts",
        Some("kube-system"),
        serde_json::json!({"metadata": {"name": "descheduler-sa", "namespace": "kube-system", "uid": "sa-uid"}}),
    )
    .await;
    put(
        &store,
        "pods",
        Some("kube-system"),
        serde_json::json!({"metadata": {"name": "p", "namespace": "kube-system", "uid": "pod-uid"}}),
    )
    .await;
    store
}

#[tokio::test]
async fn a_token_authenticates_while_its_account_and_pod_exist() {
    let store = account_with_pod().await;
    let token = keys()
        .sign(&bound(Some(("p", "pod-uid")), audiences()))
        .unwrap();
    let v = verifier(store.clone(), 10);
    assert_eq!(
        v.authenticate(&token).map(|u| u.name),
        Some("system:serviceaccount:kube-system:descheduler-sa".to_string())
    );
    // Expired on a later clock, even though the signature is cached.
    assert!(verifier(store.clone(), 3600).authenticate(&token).is_none());
    // Another pod of the same name (a new uid) does not inherit the token.
    let rt = berth_api::registry::find("", "v1", "pods").unwrap();
    store
        .delete(&path::key(rt, Some("kube-system"), "p"), None)
        .await
        .unwrap();
    assert!(v.authenticate(&token).is_none());
    put(
        &store,
        "pods",
        Some("kube-system"),
        serde_json::json!({"metadata": {"name": "p", "namespace": "kube-system", "uid": "new-uid"}}),
    )
    .await;
    assert!(v.authenticate(&token).is_none());
    // An unbound token of a deleted account is refused.
    let unbound = keys().sign(&bound(None, audiences())).unwrap();
    assert!(v.authenticate(&unbound).is_some());
    let rt = berth_api::registry::find("", "v1", "serviceaccounts").unwrap();
    store
        .delete(&path::key(rt, Some("kube-system"), "descheduler-sa"), None)
        .await
        .unwrap();
    assert!(v.authenticate(&unbound).is_none());
}

#[tokio::test]
async fn an_extended_token_keeps_working_past_its_hour_and_counts_as_stale() {
    let store = account_with_pod().await;
    let mut claims = bound(Some(("p", "pod-uid")), audiences());
    let issued = claims.iat.unwrap();
    claims.exp = Some(issued + 365 * 24 * 3600);
    claims.kubernetes.as_mut().unwrap().warnafter = Some(issued + 3607);
    let token = keys().sign(&claims).unwrap();
    let metrics = Arc::new(crate::metrics::ApiMetrics::new());
    let at_time = |now| verifier(store.clone(), now).counting(metrics.clone());
    assert!(at_time(10).authenticate(&token).is_some());
    assert!(at_time(3600).authenticate(&token).is_some());
    assert!(at_time(4000).authenticate(&token).is_some());
    let text = metrics.render(&store);
    assert!(
        text.contains("serviceaccount_valid_tokens_total 2"),
        "{text}"
    );
    assert!(
        text.contains("serviceaccount_stale_tokens_total 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_legacy_token_lives_as_long_as_its_secret() {
    use base64::Engine;
    let store = Store::memory();
    put(
        &store,
        "serviceaccounts",
        Some("ci"),
        serde_json::json!({"metadata": {"name": "builder", "namespace": "ci", "uid": "u1"}}),
    )
    .await;
    let sa = Ref {
        name: "builder".into(),
        uid: "u1".into(),
    };
    let token = keys()
        .sign(&Claims::legacy("ci", &sa, "builder-token"))
        .unwrap();
    let v = verifier(store.clone(), 0);
    assert!(v.authenticate(&token).is_none(), "no Secret yet");
    let data = base64::engine::general_purpose::STANDARD.encode(&token);
    put(
        &store,
        "secrets",
        Some("ci"),
        serde_json::json!({"metadata": {"name": "builder-token", "namespace": "ci",
            "annotations": {ANNOTATION_SA_NAME: "builder", ANNOTATION_SA_UID: "u1"}},
            "type": "kubernetes.io/service-account-token", "data": {"token": data}}),
    )
    .await;
    assert_eq!(
        v.authenticate(&token).map(|u| u.name),
        Some("system:serviceaccount:ci:builder".to_string())
    );
}

#[tokio::test]
async fn a_token_review_answers_the_requested_audiences_the_token_has() {
    let store = Store::memory();
    put(
        &store,
        "serviceaccounts",
        Some("kube-system"),
        serde_json::json!({"metadata": {"name": "descheduler-sa", "namespace": "kube-system", "uid": "sa-uid"}}),
    )
    .await;
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let token = keys()
        .sign(&bound(None, strings(&["vault", "api", ISSUER])))
        .unwrap();
    let v = verifier(store.clone(), 10);
    let audiences_of = |requested: &[&str]| v.review(&token, &strings(requested)).map(|(_, a)| a);
    // None requested: the API server's.
    assert_eq!(audiences_of(&[]), Some(strings(&[ISSUER])));
    // The intersection, in the token's order.
    assert_eq!(
        audiences_of(&["api", "other", "vault"]),
        Some(strings(&["vault", "api"]))
    );
    // Nothing in common: not authenticated.
    assert_eq!(audiences_of(&["other"]), None);
    assert_eq!(
        intersect(&strings(&["a", "b"]), &strings(&["b", "c"])),
        strings(&["b"])
    );
}

proptest! {
    #[test]
    fn arbitrary_bearer_strings_never_panic(token in "(?s).{0,400}", jwtish in "[A-Za-z0-9_-]{0,60}\\.[A-Za-z0-9_-]{0,200}\\.[A-Za-z0-9_-]{0,60}") {
        let v = verifier(Store::memory(), 0);
        prop_assert!(v.authenticate(&token).is_none());
        prop_assert!(v.authenticate(&jwtish).is_none());
    }
}

#[test]
fn a_pod_being_deleted_keeps_its_tokens_until_the_grace_period_and_leeway_end() {
    let pod = |ts: &str| serde_json::json!({"metadata": {"deletionTimestamp": ts}});
    let now = at(1000);
    let ts = |s: i64| berth_core::clock::timestamp(at(s));
    assert!(
        !deleted_long_ago(&pod(&ts(1030)), now),
        "grace period running"
    );
    assert!(!deleted_long_ago(&pod(&ts(950)), now), "within the leeway");
    assert!(deleted_long_ago(&pod(&ts(900)), now));
    assert!(!deleted_long_ago(&serde_json::json!({"metadata": {}}), now));
}

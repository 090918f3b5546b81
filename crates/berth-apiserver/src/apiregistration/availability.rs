//! The `Available` condition of every APIService, as upstream's status controllers set it.
//!
//! A local APIService is always available (`Local`). A remote one is checked in order: its
//! Service exists (`ServiceNotFound`), listens on the APIService's port (`ServicePortError`),
//! has EndpointSlices (`EndpointsNotFound`) with a ready address at that port's name
//! (`MissingEndpoints`), and its backend answers `/apis/<group>/<version>` with a 2xx within
//! five seconds (`FailedDiscoveryCheck`); then it is `Passed`. The checks run when an
//! APIService changes and every [`RECHECK`], and the discovery document a passing check
//! fetched is what aggregated discovery lists for it.
//!
//! [`preflight`] and [`condition`] are the engine (pure); [`spawn`] is the driver.

use super::{local, proxy, ApiServices, Registered, ServiceRef};
use crate::codec::encode;
use berth_core::clock::Clock;
use berth_store::Store;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// How often every APIService is checked again without a change (upstream resyncs every 30
/// seconds; berth's checks are cheap and a stopped backend is noticed sooner).
pub const RECHECK: Duration = Duration::from_secs(5);

/// The least time between two passes, so that a pass's own status writes (which wake the
/// loop) do not make it spin.
const MIN_GAP: Duration = Duration::from_millis(500);

/// The largest discovery document kept from a backend.
const DISCOVERY_LIMIT: usize = 1 << 20;

/// Why an APIService is not available (`reason`, `message`).
pub type Unavailable = (&'static str, String);

/// The checks before the discovery request, on the stored `service` and the EndpointSlices
/// labelled with its name: `Ok` when a request could go somewhere.
pub fn preflight(
    svc: &ServiceRef,
    service: Option<&Value>,
    slices: &[Value],
) -> Result<(), Unavailable> {
    let Some(service) = service else {
        return Err((
            "ServiceNotFound",
            format!(
                "service/{} in \"{}\" is not present",
                svc.name, svc.namespace
            ),
        ));
    };
    let kind = service["spec"]["type"].as_str().unwrap_or("ClusterIP");
    if kind != "ClusterIP" {
        return Ok(());
    }
    let Some(port_name) = proxy::service_port_name(service, svc.port) else {
        return Err((
            "ServicePortError",
            format!(
                "service/{} in \"{}\" is not listening on port {}",
                svc.name, svc.namespace, svc.port
            ),
        ));
    };
    if slices.is_empty() {
        return Err((
            "EndpointsNotFound",
            format!(
                "cannot find endpointslices for service/{} in \"{}\"",
                svc.name, svc.namespace
            ),
        ));
    }
    if slices
        .iter()
        .all(|s| proxy::slice_endpoints(s, &port_name).is_empty())
    {
        return Err((
            "MissingEndpoints",
            format!(
                "endpointslices for service/{} in \"{}\" have no addresses with port name \"{port_name}\"",
                svc.name, svc.namespace
            ),
        ));
    }
    Ok(())
}

/// The `Available` condition an outcome gives, at `ts`; `previous` keeps its transition time
/// when the status does not change (upstream's `SetAPIServiceCondition`).
pub fn condition(outcome: &Result<(), Unavailable>, previous: Option<&Value>, ts: &str) -> Value {
    let (status, reason, message) = match outcome {
        Ok(()) => ("True", "Passed", "all checks passed".to_string()),
        Err((reason, message)) => ("False", *reason, message.clone()),
    };
    with_transition(status, reason, &message, previous, ts)
}

fn with_transition(
    status: &str,
    reason: &str,
    message: &str,
    previous: Option<&Value>,
    ts: &str,
) -> Value {
    let since = previous
        .filter(|p| p["status"] == status)
        .and_then(|p| p["lastTransitionTime"].as_str())
        .unwrap_or(ts);
    json!({"type": "Available", "status": status, "lastTransitionTime": since,
        "reason": reason, "message": message})
}

/// The stored object's `Available` condition.
fn available_condition(obj: &Value) -> Option<&Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")
}

fn stored(store: &Store, key: &str) -> Option<Value> {
    serde_json::from_slice(&store.get(key).ok()??.value).ok()
}

fn slices_of(store: &Store, svc: &ServiceRef) -> Vec<Value> {
    let prefix = format!(
        "/registry/discovery.k8s.io/endpointslices/{}/",
        svc.namespace
    );
    store
        .range(&prefix, None, 0, None)
        .map(|r| r.kvs)
        .unwrap_or_default()
        .iter()
        .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
        .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == svc.name.as_str())
        .collect()
}

/// Checks one remote APIService: the preflight on the store, then the discovery request;
/// the backend's `APIResourceList` when it answered with one.
async fn check(
    store: &Store,
    tls: Arc<rustls::ClientConfig>,
    registered: &Registered,
    svc: &ServiceRef,
) -> (Result<(), Unavailable>, Option<Value>) {
    let service = stored(
        store,
        &format!("/registry/core/services/{}/{}", svc.namespace, svc.name),
    );
    if let Err(e) = preflight(svc, service.as_ref(), &slices_of(store, svc)) {
        return (Err(e), None);
    }
    let path = if registered.group.is_empty() {
        format!("/api/{}", registered.version)
    } else {
        format!("/apis/{}/{}", registered.group, registered.version)
    };
    let endpoint = match proxy::resolve(store, svc) {
        Ok(e) => e,
        Err(e) => return (Err(("FailedDiscoveryCheck", e)), None),
    };
    let url = format!("https://{}:{}{path}", endpoint.host, endpoint.port);
    let answered = tokio::time::timeout(
        Duration::from_secs(6),
        proxy::get(registered, tls, &endpoint, &path, DISCOVERY_LIMIT),
    )
    .await;
    let failed = |why: String| {
        (
            Err((
                "FailedDiscoveryCheck",
                format!("failing or missing response from {url}: {why}"),
            )),
            None,
        )
    };
    match answered {
        Err(_) => (
            Err((
                "FailedDiscoveryCheck",
                format!("timed out waiting for {url}"),
            )),
            None,
        ),
        Ok(Err(e)) => failed(format!("Get \"{url}\": {e}")),
        Ok(Ok((status, _))) if !status.is_success() && !status.is_redirection() => {
            failed(format!("bad status from {url}: {}", status.as_u16()))
        }
        Ok(Ok((_, body))) => {
            let list = serde_json::from_slice::<Value>(&body)
                .ok()
                .filter(|v| v["kind"] == "APIResourceList");
            (Ok(()), list)
        }
    }
}

/// Writes `wanted` as the `Available` condition of APIService `name`, if it differs from the
/// stored one (a conflicting write is left to the next pass).
async fn write_condition(store: &Store, name: &str, wanted: Value) {
    let key = format!("{}{name}", super::PREFIX);
    let Ok(Some(kv)) = store.get(&key) else {
        return;
    };
    let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else {
        return;
    };
    if available_condition(&obj) == Some(&wanted) {
        return;
    }
    let mut conditions: Vec<Value> = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c["type"] != "Available")
        .collect();
    conditions.push(wanted);
    obj["status"] = json!({"conditions": conditions});
    match store
        .update(&key, encode(&obj), Some(kv.mod_revision))
        .await
    {
        Ok(_) | Err(berth_store::Error::Conflict { .. } | berth_store::Error::NotFound { .. }) => {}
        Err(e) => tracing::warn!(error = %e, apiservice = name, "writing APIService status failed"),
    }
}

/// One pass: the local APIServices brought to what is served, then every APIService's
/// condition.
async fn pass(store: &Store, clock: &Clock, services: &ApiServices, crds: &[(String, String)]) {
    if let Err(e) = local::reconcile(store, clock, &local::desired(crds)).await {
        tracing::warn!(error = %e, "keeping the local APIServices failed");
    }
    let snapshot = services.snapshot();
    let checks = snapshot.by_name.values().map(|registered| async move {
        let key = format!("{}{}", super::PREFIX, registered.name);
        let previous = stored(store, &key);
        let previous = previous.as_ref().and_then(available_condition).cloned();
        let ts = clock.timestamp();
        let wanted = match &registered.service {
            None => with_transition(
                "True",
                local::LOCAL_REASON,
                local::LOCAL_MESSAGE,
                previous.as_ref(),
                &ts,
            ),
            Some(svc) => {
                let (outcome, discovered) =
                    check(store, services.check_tls(), registered, svc).await;
                if outcome.is_ok() {
                    if let Some(list) = discovered {
                        services.set_discovered(&registered.name, Some(list));
                    }
                } else {
                    services.set_discovered(&registered.name, None);
                }
                condition(&outcome, previous.as_ref(), &ts)
            }
        };
        write_condition(store, &registered.name, wanted).await;
    });
    futures::future::join_all(checks).await;
}

/// The `(group, version)`s the stored CustomResourceDefinitions serve now.
pub type CustomGroupVersions = Box<dyn Fn() -> Vec<(String, String)> + Send + Sync>;

/// Whether a periodic recheck has anything to do: a remote APIService's backend may have come
/// or gone, or the CRDs' group versions (and so the local APIServices) changed. With neither,
/// every condition is the one the last pass wrote, and any edit of an APIService wakes the loop
/// by itself; skipping keeps an idle server (and `berth simulate`, whose day would otherwise
/// hold 17,280 passes over every local APIService) from rereading them all every 5 s.
pub fn recheck_needed(
    any_remote: bool,
    crds: &[(String, String)],
    last_crds: Option<&[(String, String)]>,
) -> bool {
    any_remote || last_crds != Some(crds)
}

/// Runs the availability checks (and keeps the local APIServices, `crds` among them) until
/// the process ends.
pub fn spawn(store: Store, clock: Clock, services: Arc<ApiServices>, crds: CustomGroupVersions) {
    tokio::spawn(async move {
        let mut last_crds: Option<Vec<(String, String)>> = None;
        let mut changed = true;
        loop {
            let served = crds();
            let any_remote = !services.snapshot().remote.is_empty();
            if changed || recheck_needed(any_remote, &served, last_crds.as_deref()) {
                pass(&store, &clock, &services, &served).await;
                last_crds = Some(served);
            }
            tokio::time::sleep(MIN_GAP).await;
            changed = tokio::select! {
                _ = services.changed.notified() => true,
                _ = tokio::time::sleep(RECHECK) => false,
            };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc() -> ServiceRef {
        ServiceRef {
            namespace: "sample".into(),
            name: "api".into(),
            port: 443,
        }
    }

    #[test]
    fn an_idle_recheck_is_skipped_only_with_nothing_remote_and_the_same_crds() {
        let gv = |g: &str| (g.to_string(), "v1".to_string());
        let now = vec![gv("a.example.com")];
        assert!(!recheck_needed(false, &now, Some(&now)));
        assert!(recheck_needed(true, &now, Some(&now)));
        assert!(recheck_needed(false, &now, Some(&[])));
        assert!(recheck_needed(false, &now, Some(&[gv("b.example.com")])));
        assert!(recheck_needed(false, &now, None));
    }

    #[test]
    fn preflight_reasons_in_upstream_order() {
        let reason = |service: Option<&Value>, slices: &[Value]| {
            preflight(&svc(), service, slices).map_err(|(r, m)| format!("{r}: {m}"))
        };
        assert_eq!(
            reason(None, &[]),
            Err("ServiceNotFound: service/api in \"sample\" is not present".into())
        );
        let service = json!({"spec": {"ports": [{"name": "https", "port": 443}]}});
        let wrong_port = json!({"spec": {"ports": [{"port": 80}]}});
        assert_eq!(
            reason(Some(&wrong_port), &[]),
            Err("ServicePortError: service/api in \"sample\" is not listening on port 443".into())
        );
        assert_eq!(
            reason(Some(&service), &[]),
            Err(
                "EndpointsNotFound: cannot find endpointslices for service/api in \"sample\""
                    .into()
            )
        );
        let unready = json!({"ports": [{"name": "https", "port": 8443}],
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": false}}]});
        assert_eq!(
            reason(Some(&service), &[unready]),
            Err("MissingEndpoints: endpointslices for service/api in \"sample\" have no addresses with port name \"https\"".into())
        );
        let ready = json!({"ports": [{"name": "https", "port": 8443}],
            "endpoints": [{"addresses": ["127.0.0.1"]}]});
        assert_eq!(reason(Some(&service), &[ready]), Ok(()));
        let external = json!({"spec": {"type": "ExternalName", "externalName": "x.example.com"}});
        assert_eq!(reason(Some(&external), &[]), Ok(()));
    }

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let passed = condition(&Ok(()), None, "t1");
        assert_eq!(passed["reason"], "Passed");
        assert_eq!(passed["message"], "all checks passed");
        assert_eq!(passed["lastTransitionTime"], "t1");
        let again = condition(&Ok(()), Some(&passed), "t2");
        assert_eq!(again["lastTransitionTime"], "t1");
        let failed = condition(
            &Err(("FailedDiscoveryCheck", "x".into())),
            Some(&passed),
            "t3",
        );
        assert_eq!(failed["status"], "False");
        assert_eq!(failed["lastTransitionTime"], "t3");
    }
}

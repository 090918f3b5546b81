//! Forwarding a request to the backend of a remote APIService, as upstream's aggregator proxy
//! does with endpoint routing: the Service's port is found by number, one ready endpoint of
//! its EndpointSlices (or Endpoints) with that port's name is chosen, and the request goes
//! there over TLS, the serving certificate verified against the APIService's `caBundle` for
//! the name `<service>.<namespace>.svc` (or not at all with `insecureSkipTLSVerify`). The
//! caller, authenticated and authorized here, is named in `X-Remote-User`, `X-Remote-Group`
//! and `X-Remote-Extra-*`; its own credentials are not forwarded.

use super::{Registered, ServiceRef};
use crate::user::UserInfo;
use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use berth_store::Store;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How long connecting to a backend (TCP and TLS) may take.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Where one request to a Service goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// The client certificate berth presents to backends (the front proxy's, see
/// [`crate::tls::FrontProxy`]).
#[derive(Debug)]
pub struct ClientIdentity {
    certs: Vec<CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
}

impl ClientIdentity {
    /// The identity of a PEM certificate (chain) and key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<ClientIdentity, String> {
        use rustls::pki_types::pem::PemObject;
        let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("client certificate: {e}"))?;
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| format!("client key: {e}"))?;
        Ok(ClientIdentity { certs, key })
    }
}

/// The TLS client settings of a remote APIService: its `caBundle` (base64 of PEM, as the JSON
/// form carries bytes) as the only roots, or no verification with `insecureSkipTLSVerify`;
/// with `identity`, berth's client certificate.
pub fn tls_config(
    ca_bundle: &str,
    insecure: bool,
    identity: Option<&ClientIdentity>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    use base64::Engine;
    use rustls::pki_types::pem::PemObject;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let authenticate = |b: rustls::ConfigBuilder<
        rustls::ClientConfig,
        rustls::client::WantsClientCert,
    >| match identity {
        None => Ok(b.with_no_client_auth()),
        Some(id) => b
            .with_client_auth_cert(id.certs.clone(), id.key.clone_key())
            .map_err(|e| format!("client certificate: {e}")),
    };
    let mut config = if insecure {
        authenticate(
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unverified(provider))),
        )?
    } else {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca_bundle.trim())
            .map_err(|e| format!("caBundle is not base64: {e}"))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
            roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
        }
        authenticate(builder.with_root_certificates(roots))?
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The verifier of `insecureSkipTLSVerify`: any certificate is accepted (its signatures are
/// still checked, so the handshake is a real one).
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn stored(store: &Store, key: &str) -> Option<Value> {
    let kv = store.get(key).ok()??;
    serde_json::from_slice(&kv.value).ok()
}

/// Where a request to `svc` goes, as upstream's endpoint resolver finds it; the error says
/// why there is nowhere.
pub fn resolve(store: &Store, svc: &ServiceRef) -> Result<Endpoint, String> {
    let service = stored(
        store,
        &format!("/registry/core/services/{}/{}", svc.namespace, svc.name),
    )
    .ok_or_else(|| format!("service \"{}\" not found", svc.name))?;
    let spec = &service["spec"];
    match spec["type"].as_str().unwrap_or("ClusterIP") {
        "ExternalName" => {
            return Ok(Endpoint {
                host: spec["externalName"].as_str().unwrap_or("").to_string(),
                port: svc.port,
            })
        }
        "ClusterIP" | "NodePort" | "LoadBalancer" => {}
        other => return Err(format!("unsupported service type \"{other}\"")),
    }
    let port_name = service_port_name(&service, svc.port).ok_or_else(|| {
        format!(
            "no service port {} found for service \"{}\"",
            svc.port, svc.name
        )
    })?;
    let candidates = ready_endpoints(store, svc, &port_name);
    if candidates.is_empty() {
        return Err(format!(
            "no endpoints available for service \"{}\"",
            svc.name
        ));
    }
    let pick = rand::random::<u32>() as usize % candidates.len();
    Ok(candidates[pick].clone())
}

/// The name of the Service's port numbered `port` (`""` for an unnamed one).
pub fn service_port_name(service: &Value, port: u16) -> Option<String> {
    service["spec"]["ports"]
        .as_array()?
        .iter()
        .find(|p| p["port"].as_u64() == Some(u64::from(port)))
        .map(|p| p["name"].as_str().unwrap_or("").to_string())
}

/// The ready addresses of the Service's EndpointSlices with a port named `port_name`, or of
/// its Endpoints when it has no slices.
pub fn ready_endpoints(store: &Store, svc: &ServiceRef, port_name: &str) -> Vec<Endpoint> {
    let prefix = format!(
        "/registry/discovery.k8s.io/endpointslices/{}/",
        svc.namespace
    );
    let slices: Vec<Value> = store
        .range(&prefix, None, 0, None)
        .map(|r| r.kvs)
        .unwrap_or_default()
        .iter()
        .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
        .filter(|s| s["metadata"]["labels"]["kubernetes.io/service-name"] == svc.name.as_str())
        .collect();
    if !slices.is_empty() {
        return slices
            .iter()
            .flat_map(|s| slice_endpoints(s, port_name))
            .collect();
    }
    stored(
        store,
        &format!("/registry/core/endpoints/{}/{}", svc.namespace, svc.name),
    )
    .map(|e| endpoints_addresses(&e, port_name))
    .unwrap_or_default()
}

/// The ready addresses of one EndpointSlice at its port named `port_name`.
pub fn slice_endpoints(slice: &Value, port_name: &str) -> Vec<Endpoint> {
    let port = slice["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"].as_str().unwrap_or("") == port_name)
        .and_then(|p| p["port"].as_u64())
        .and_then(|p| u16::try_from(p).ok());
    let Some(port) = port else {
        return Vec::new();
    };
    slice["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["conditions"]["ready"].as_bool().unwrap_or(true))
        .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .map(|host| Endpoint {
            host: host.to_string(),
            port,
        })
        .collect()
}

fn endpoints_addresses(endpoints: &Value, port_name: &str) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for subset in endpoints["subsets"].as_array().into_iter().flatten() {
        let port = subset["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["name"].as_str().unwrap_or("") == port_name)
            .and_then(|p| p["port"].as_u64())
            .and_then(|p| u16::try_from(p).ok());
        let Some(port) = port else { continue };
        for a in subset["addresses"].as_array().into_iter().flatten() {
            if let Some(ip) = a["ip"].as_str() {
                out.push(Endpoint {
                    host: ip.to_string(),
                    port,
                });
            }
        }
    }
    out
}

/// Upstream's answer when a request cannot be forwarded: plain text, as `http.Error` writes it.
pub fn plain_error(code: StatusCode, message: &str) -> Response {
    (
        code,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (HeaderName::from_static("x-content-type-options"), "nosniff"),
        ],
        format!("{message}\n"),
    )
        .into_response()
}

/// The request headers that are not forwarded: the caller's credentials and identity claims
/// (replaced by the `X-Remote-*` headers) and the hop-by-hop ones.
fn forwarded(name: &HeaderName) -> bool {
    let n = name.as_str();
    !(n == "authorization"
        || n.starts_with("impersonate-")
        || n.starts_with("x-remote-")
        || matches!(
            n,
            "connection"
                | "host"
                | "keep-alive"
                | "proxy-connection"
                | "proxy-authorization"
                | "te"
                | "trailer"
                | "transfer-encoding"
                | "upgrade"
        ))
}

/// The `X-Remote-*` headers that name `user` to the backend (client-go's
/// `SetAuthProxyHeaders`): extra keys are escaped as URL path segments (header names travel
/// lowercased; the backend unescapes them case-insensitively, as k8s.io/apiserver does).
pub fn identity_headers(user: &UserInfo) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    let mut push = |name: String, value: &str| {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            out.push((n, v));
        }
    };
    push("x-remote-user".into(), &user.name);
    if !user.uid.is_empty() {
        push("x-remote-uid".into(), &user.uid);
    }
    for g in &user.groups {
        push("x-remote-group".into(), g);
    }
    for (key, values) in &user.extra {
        let escaped: String = key
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        for v in values {
            push(format!("x-remote-extra-{escaped}"), v);
        }
    }
    out
}

/// The server name the backend's certificate must carry: `<service>.<namespace>.svc`.
pub fn server_name(svc: &ServiceRef) -> String {
    format!("{}.{}.svc", svc.name, svc.namespace)
}

/// Connects to `endpoint` over TLS as `registered`'s client; the error is what the caller
/// is told.
async fn connect(
    registered: &Registered,
    svc: &ServiceRef,
    endpoint: &Endpoint,
) -> Result<hyper::client::conn::http1::SendRequest<Body>, String> {
    let tls = registered.tls.clone()?;
    let address = format!("{}:{}", endpoint.host, endpoint.port);
    let dial = async {
        let tcp = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
            .await
            .map_err(|e| format!("dial tcp {address}: connect: {e}"))?;
        let name =
            ServerName::try_from(server_name(svc)).map_err(|e| format!("server name: {e}"))?;
        tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("tls: {e}"))
    };
    let stream = match tokio::time::timeout(DIAL_TIMEOUT, dial).await {
        Ok(r) => r?,
        Err(_) => return Err(format!("dial tcp {address}: i/o timeout")),
    };
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    // Driven until the (possibly streamed) response body ends.
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "aggregated API connection ended");
        }
    });
    Ok(sender)
}

/// Sends one request to `registered`'s backend at `endpoint` and answers with what it
/// answered (streamed), or 503 with why it could not be reached.
pub async fn forward(
    registered: &Registered,
    endpoint: &Endpoint,
    method: Method,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Body,
    user: &UserInfo,
) -> Response {
    let Some(svc) = &registered.service else {
        return plain_error(StatusCode::NOT_FOUND, "");
    };
    let mut sender = match connect(registered, svc, endpoint).await {
        Ok(s) => s,
        Err(e) => {
            return plain_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("error trying to reach service: {e}"),
            )
        }
    };
    let mut req = hyper::Request::builder().method(method).uri(path_and_query);
    for (k, v) in headers.iter().filter(|(k, _)| forwarded(k)) {
        req = req.header(k, v);
    }
    for (k, v) in identity_headers(user) {
        req = req.header(k, v);
    }
    let host = format!("{}:{}", endpoint.host, endpoint.port);
    let req = match req.header(header::HOST, host).body(body) {
        Ok(r) => r,
        Err(e) => return plain_error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    match sender.send_request(req).await {
        Ok(resp) => resp.map(Body::new).into_response(),
        Err(e) => plain_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("error trying to reach service: {e}"),
        ),
    }
}

/// GETs `path` from `registered`'s backend at `endpoint` as the aggregator itself
/// (`system:kube-aggregator` in `system:masters`), with `tls`; the status and at most
/// `limit` bytes of the body.
pub async fn get(
    registered: &Registered,
    tls: Arc<rustls::ClientConfig>,
    endpoint: &Endpoint,
    path: &str,
    limit: usize,
) -> Result<(StatusCode, bytes::Bytes), String> {
    let Some(svc) = &registered.service else {
        return Err("local APIService".into());
    };
    let checker = Registered {
        name: registered.name.clone(),
        group: String::new(),
        version: String::new(),
        group_priority: 0,
        version_priority: 0,
        service: None,
        tls: Ok(tls),
        available: false,
    };
    let mut sender = connect(&checker, svc, endpoint).await?;
    let user = UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..UserInfo::default()
    };
    let mut req = hyper::Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(header::ACCEPT, "application/json")
        .header(header::HOST, format!("{}:{}", endpoint.host, endpoint.port));
    for (k, v) in identity_headers(&user) {
        req = req.header(k, v);
    }
    let req = req.body(Body::empty()).map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let body = axum::body::to_bytes(Body::new(resp.into_body()), limit)
        .await
        .map_err(|e| e.to_string())?;
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_caller_is_named_in_remote_headers() {
        let mut user = UserInfo {
            name: "alice".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            ..UserInfo::default()
        };
        user.extra
            .insert("example.org/scopes".into(), vec!["a".into(), "b".into()]);
        let headers: Vec<(String, String)> = identity_headers(&user)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let h = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            headers,
            [
                h("x-remote-user", "alice"),
                h("x-remote-group", "dev"),
                h("x-remote-group", "system:authenticated"),
                h("x-remote-extra-example.org%2fscopes", "a"),
                h("x-remote-extra-example.org%2fscopes", "b"),
            ]
        );
    }

    #[test]
    fn credentials_and_hop_by_hop_headers_are_not_forwarded() {
        for name in [
            "authorization",
            "impersonate-user",
            "x-remote-user",
            "connection",
            "host",
        ] {
            assert!(!forwarded(&HeaderName::from_static(name)), "{name}");
        }
        for name in ["accept", "content-type", "user-agent"] {
            assert!(forwarded(&HeaderName::from_static(name)), "{name}");
        }
    }

    #[test]
    fn ready_slice_endpoints_at_the_named_port() {
        let slice = json!({"ports": [{"name": "https", "port": 8443}],
            "endpoints": [{"addresses": ["127.0.0.1"]},
                          {"addresses": ["10.0.0.9"], "conditions": {"ready": false}}]});
        assert_eq!(
            slice_endpoints(&slice, "https"),
            [Endpoint {
                host: "127.0.0.1".into(),
                port: 8443
            }]
        );
        assert!(slice_endpoints(&slice, "").is_empty());
        let svc = json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}});
        assert_eq!(service_port_name(&svc, 443).as_deref(), Some("https"));
        assert_eq!(service_port_name(&svc, 80), None);
    }

    #[test]
    fn a_ca_bundle_must_hold_certificates() {
        assert!(tls_config("", true, None).is_ok());
        assert!(tls_config("not base64!", false, None).is_err());
        assert!(tls_config("", false, None).is_ok());
    }

    #[tokio::test]
    async fn a_service_resolves_to_its_slices_ready_address() {
        let store = Store::memory();
        let put = |key: &str, v: Value| {
            let store = store.clone();
            let key = key.to_string();
            async move {
                store
                    .create(&key, bytes::Bytes::from(v.to_string()))
                    .await
                    .unwrap();
            }
        };
        let svc = ServiceRef {
            namespace: "s".into(),
            name: "api".into(),
            port: 443,
        };
        assert_eq!(
            resolve(&store, &svc),
            Err("service \"api\" not found".to_string())
        );
        put(
            "/registry/core/services/s/api",
            json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}),
        )
        .await;
        assert_eq!(
            resolve(&store, &svc),
            Err("no endpoints available for service \"api\"".to_string())
        );
        put(
            "/registry/discovery.k8s.io/endpointslices/s/api-1",
            json!({"metadata": {"labels": {"kubernetes.io/service-name": "api"}},
                "ports": [{"port": 8443}], "endpoints": [{"addresses": ["127.0.0.1"]}]}),
        )
        .await;
        assert_eq!(
            resolve(&store, &svc),
            Ok(Endpoint {
                host: "127.0.0.1".into(),
                port: 8443
            })
        );
    }
}

//! Calling a webhook: one HTTPS POST over a fresh connection, its server verified against the
//! configuration's `caBundle` (or the system's roots without one), bounded in time
//! (`timeoutSeconds`) and in the size of the answer.
//!
//! A connection per call keeps the client free of pools to bound and clean up; webhooks are
//! called only for the requests their rules match.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Largest answer read from a webhook: a patched object of the store's largest size,
/// base64-encoded, with room for the review around it.
pub const MAX_RESPONSE_BYTES: usize = 6 * 1024 * 1024;

/// How to reach a webhook, resolved from its `clientConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The name the server's certificate must carry (the URL's host, or
    /// `<service>.<namespace>.svc`).
    pub server_name: String,
    /// Where to connect (`host:port`).
    pub address: String,
    /// The URL the request is said to go to, in messages (upstream's `Post "<url>"`).
    pub url: String,
    /// Path and query sent.
    pub path_and_query: String,
}

/// A `clientConfig.url`, split: `https://host[:port][/path][?query]`.
pub fn parse_url(url: &str) -> Result<(String, u16, String), String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("webhook URL {url:?} is not https"))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("webhook URL {url:?} has a bad host"))?;
        let port = after.strip_prefix(':').unwrap_or("443");
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p),
            None => (authority.to_string(), "443"),
        }
    };
    let port = port
        .parse::<u16>()
        .map_err(|_| format!("webhook URL {url:?} has a bad port"))?;
    if host.is_empty() {
        return Err(format!("webhook URL {url:?} has no host"));
    }
    Ok((host, port, path))
}

/// Adds upstream's `timeout=<n>s` query parameter, which tells the webhook its budget.
pub fn with_timeout(path: &str, timeout: Duration) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}timeout={}s", timeout.as_secs())
}

/// The TLS settings for one webhook: its `caBundle`'s certificates as roots, or the system's.
pub fn tls_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.is_empty() {
        for cert in system_roots() {
            let _ = roots.add(cert.clone());
        }
    } else {
        for cert in CertificateDer::pem_slice_iter(ca_bundle) {
            let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
        }
        if roots.is_empty() {
            return Err("unable to load root certificates: no certificates found".into());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The system's trusted roots, read once.
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: OnceLock<Vec<CertificateDer<'static>>> = OnceLock::new();
    ROOTS.get_or_init(|| rustls_native_certs::load_native_certs().certs)
}

/// Posts `body` to `endpoint` and returns the answer's body. The error is the reason a call
/// failed, in the words upstream's client uses (`Post "<url>": ...`).
pub async fn post(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Bytes, String> {
    let url = &endpoint.url;
    match tokio::time::timeout(timeout, exchange(endpoint, tls, body)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(format!("Post {url:?}: {e}")),
        Err(_) => Err(format!("Post {url:?}: context deadline exceeded")),
    }
}

async fn exchange(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
    body: Vec<u8>,
) -> Result<Bytes, String> {
    let tcp = tokio::net::TcpStream::connect(&endpoint.address)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("dial tcp {}: connect: connection refused", endpoint.address)
            }
            _ => format!("dial tcp {}: {e}", endpoint.address),
        })?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(endpoint.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", endpoint.server_name))?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    // The connection is driven until the answer is read; it ends with this call.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let request = hyper::Request::post(&endpoint.path_and_query)
        .header(hyper::header::HOST, &endpoint.server_name)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let answer = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| format!("reading the response: {e}"))?
            .to_bytes();
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_string();
            return Err(format!(
                "the server responded with status code {} ({text:?})",
                status.as_u16()
            ));
        }
        Ok(bytes)
    }
    .await;
    driver.abort();
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        assert_eq!(
            parse_url("https://127.0.0.1:8443/mutate").unwrap(),
            ("127.0.0.1".into(), 8443, "/mutate".into())
        );
        assert_eq!(
            parse_url("https://hooks.example.com").unwrap(),
            ("hooks.example.com".into(), 443, "/".into())
        );
        assert_eq!(
            parse_url("https://[::1]:9443/v?x=1").unwrap(),
            ("::1".into(), 9443, "/v?x=1".into())
        );
        assert!(parse_url("http://insecure").is_err());
        assert!(parse_url("https://h:notaport/").is_err());
    }

    #[test]
    fn the_timeout_travels_as_a_query_parameter() {
        assert_eq!(
            with_timeout("/v", Duration::from_secs(10)),
            "/v?timeout=10s"
        );
        assert_eq!(
            with_timeout("/v?a=b", Duration::from_secs(5)),
            "/v?a=b&timeout=5s"
        );
    }

    #[test]
    fn a_ca_bundle_without_certificates_is_an_error() {
        assert!(tls_config(b"not a certificate").is_err());
    }
}

//! Serving credentials: a CA, a serving certificate and an admin token, created on first start
//! and kept in the data directory; the kubeconfig that uses them; the HTTPS listener.

use axum::Router;
use base64::Engine;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpListener;

/// What a client needs to trust and authenticate to the server.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub token: String,
}

/// Errors creating or reading credentials.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("generating certificates: {0}")]
    Generate(String),
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

fn read(path: &Path) -> Result<Option<String>, TlsError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TlsError::Io {
            path: path.into(),
            source,
        }),
    }
}

fn write(path: &Path, contents: &str) -> Result<(), TlsError> {
    std::fs::write(path, contents).map_err(|source| TlsError::Io {
        path: path.into(),
        source,
    })
}

/// Loads the credentials from `dir`, creating them on first start.
pub fn load_or_create(dir: &Path, hosts: &[String]) -> Result<Credentials, TlsError> {
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Io {
        path: dir.into(),
        source,
    })?;
    let files = ["ca.crt", "server.crt", "server.key", "token"].map(|f| dir.join(f));
    if let [Some(ca_pem), Some(cert_pem), Some(key_pem), Some(token)] = [
        read(&files[0])?,
        read(&files[1])?,
        read(&files[2])?,
        read(&files[3])?,
    ] {
        return Ok(Credentials {
            ca_pem,
            cert_pem,
            key_pem,
            token: token.trim().to_string(),
        });
    }
    let creds = generate(hosts)?;
    write(&files[0], &creds.ca_pem)?;
    write(&files[1], &creds.cert_pem)?;
    write(&files[2], &creds.key_pem)?;
    write(&files[3], &creds.token)?;
    Ok(creds)
}

fn generate(hosts: &[String]) -> Result<Credentials, TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let err = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "berth-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut names: Vec<String> = vec![
        "localhost".into(),
        "127.0.0.1".into(),
        "::1".into(),
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
    ];
    for h in hosts {
        if !names.contains(h) {
            names.push(h.clone());
        }
    }
    let server_key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(names).map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "berth-apiserver");
    let cert = params.signed_by(&server_key, &issuer).map_err(err)?;
    let token = {
        use rand::Rng;
        let bytes: [u8; 32] = rand::rng().random();
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    Ok(Credentials {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: server_key.serialize_pem(),
        token,
    })
}

/// A kubeconfig for the admin user of the server at `server_url`.
pub fn kubeconfig(server_url: &str, creds: &Credentials) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(&creds.ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: berth\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {ca}\nusers:\n- name: berth-admin\n  user:\n    token: {}\ncontexts:\n- name: berth\n  context:\n    cluster: berth\n    user: berth-admin\n    namespace: default\ncurrent-context: berth\n",
        creds.token
    )
}

/// Writes `<dir>/kubeconfig` and returns its path.
pub fn write_kubeconfig(
    dir: &Path,
    server_url: &str,
    creds: &Credentials,
) -> Result<PathBuf, TlsError> {
    let path = dir.join("kubeconfig");
    write(&path, &kubeconfig(server_url, creds))?;
    Ok(path)
}

/// The rustls server configuration for `creds` (HTTP/2 and HTTP/1.1 by ALPN).
pub fn server_config(creds: &Credentials) -> Result<rustls::ServerConfig, TlsError> {
    let invalid = |message: String| TlsError::Invalid {
        path: "server.crt".into(),
        message,
    };
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(creds.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(creds.key_pem.as_bytes())
        .map_err(|e| invalid(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `router` over TLS on `listener` until the process ends.
pub async fn serve(listener: TcpListener, router: Router, config: rustls::ServerConfig) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        tokio::spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
            };
            let service = TowerToHyperService::new(router);
            if let Err(e) = auto::Builder::new(TokioExecutor::new())
                .serve_connection_with_upgrades(TokioIo::new(tls), service)
                .await
            {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}

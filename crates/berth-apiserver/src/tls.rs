//! Serving credentials: a CA, a serving certificate and an admin token, created on first start
//! and kept in the data directory; the kubeconfig that uses them; the HTTPS listener.

use axum::Router;
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpListener;

/// What a client needs to trust and authenticate to the server.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub ca_pem: String,
    /// The CA's private key (PEM), kept so that berth can issue client certificates; `None`
    /// for a data dir made before berth kept it.
    pub ca_key_pem: Option<String>,
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

/// Writes a file only its owner may read or write. The mode is given at creation, so there is
/// no moment at which the secret is readable by others; a file left by an older berth with a
/// wider mode is narrowed.
pub fn write_private(path: &Path, contents: &str) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let io = |source| TlsError::Io {
        path: path.into(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(io)?;
    let mode = file.metadata().map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io)?;
    }
    file.write_all(contents.as_bytes()).map_err(io)
}

/// Creates `dir` (and its parents) readable only by its owner: it holds keys and the store. A
/// directory that exists with a wider mode (made by hand, or by an older berth) is narrowed
/// before any secret is written into it.
pub fn create_private_dir(dir: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let io = |source| TlsError::Io {
        path: dir.into(),
        source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io)?;
    let mode = std::fs::metadata(dir).map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    Ok(())
}

fn write(path: &Path, contents: &str) -> Result<(), TlsError> {
    std::fs::write(path, contents).map_err(|source| TlsError::Io {
        path: path.into(),
        source,
    })
}

/// Loads the credentials from `dir`, creating them on first start.
pub fn load_or_create(dir: &Path, hosts: &[String]) -> Result<Credentials, TlsError> {
    create_private_dir(dir)?;
    let files = ["ca.crt", "server.crt", "server.key", "token"].map(|f| dir.join(f));
    let ca_key_path = dir.join("ca.key");
    if let [Some(ca_pem), Some(cert_pem), Some(key_pem), Some(token)] = [
        read(&files[0])?,
        read(&files[1])?,
        read(&files[2])?,
        read(&files[3])?,
    ] {
        return Ok(Credentials {
            ca_pem,
            ca_key_pem: read(&ca_key_path)?,
            cert_pem,
            key_pem,
            token: token.trim().to_string(),
        });
    }
    let creds = generate(hosts)?;
    write(&files[0], &creds.ca_pem)?;
    write(&files[1], &creds.cert_pem)?;
    write_private(&files[2], &creds.key_pem)?;
    write_private(&files[3], &creds.token)?;
    if let Some(key) = &creds.ca_key_pem {
        write_private(&ca_key_path, key)?;
    }
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
    let ca_key_pem = ca_key.serialize_pem();
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
        ca_key_pem: Some(ca_key_pem),
        cert_pem: cert.pem(),
        key_pem: server_key.serialize_pem(),
        token,
    })
}

/// The aggregator's client identity towards extension API servers (upstream's front proxy):
/// a CA of its own, published as `requestheader-client-ca-file`, and the
/// `front-proxy-client` certificate it signed, which berth presents when it forwards a
/// request with the caller's `X-Remote-*` headers.
#[derive(Clone, Debug)]
pub struct FrontProxy {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// The common name of the front proxy's client certificate (`requestheader-allowed-names`).
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// Loads the front proxy's CA and client certificate from `dir`, creating them on first
/// start (`front-proxy-ca.crt`, `front-proxy-client.crt`, `front-proxy-client.key`; the
/// CA's key is not kept: nothing else is ever signed with it).
pub fn load_or_create_front_proxy(dir: &Path) -> Result<FrontProxy, TlsError> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    create_private_dir(dir)?;
    let files = [
        "front-proxy-ca.crt",
        "front-proxy-client.crt",
        "front-proxy-client.key",
    ]
    .map(|f| dir.join(f));
    if let [Some(ca_pem), Some(cert_pem), Some(key_pem)] =
        [read(&files[0])?, read(&files[1])?, read(&files[2])?]
    {
        return Ok(FrontProxy {
            ca_pem,
            cert_pem,
            key_pem,
        });
    }
    let err = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "berth-front-proxy-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, FRONT_PROXY_CLIENT);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).map_err(err)?;
    let proxy = FrontProxy {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    };
    write(&files[0], &proxy.ca_pem)?;
    write(&files[1], &proxy.cert_pem)?;
    write_private(&files[2], &proxy.key_pem)?;
    Ok(proxy)
}

/// A client certificate and key (PEM) for `user` in `groups`, signed by berth's CA (CN = the
/// user, one O per group), valid as long as the CA (rcgen's default validity, as the
/// serving certificate).
pub fn issue_client_certificate(
    creds: &Credentials,
    user: &str,
    groups: &[String],
) -> Result<(String, String), TlsError> {
    use rcgen::{
        CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose,
    };
    let err = |e: rcgen::Error| TlsError::Generate(e.to_string());
    let ca_key_pem = creds.ca_key_pem.as_deref().ok_or_else(|| {
        TlsError::Generate(
            "the data directory has no ca.key (made by an older berth): cannot sign certificates"
                .into(),
        )
    })?;
    let ca_key = KeyPair::from_pem(ca_key_pem).map_err(err)?;
    let issuer = Issuer::from_ca_cert_pem(&creds.ca_pem, ca_key).map_err(err)?;
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    params.distinguished_name.push(DnType::CommonName, user);
    for g in groups {
        params
            .distinguished_name
            .push(DnType::OrganizationName, g.as_str());
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).map_err(err)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A kubeconfig for `user` with a client certificate, for the server at `server_url`.
pub fn user_kubeconfig(
    server_url: &str,
    creds: &Credentials,
    user: &str,
    cert_pem: &str,
    key_pem: &str,
) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: berth\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {}\nusers:\n- name: {user:?}\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: berth\n  context:\n    cluster: berth\n    user: {user:?}\n    namespace: default\ncurrent-context: berth\n",
        b64(&creds.ca_pem),
        b64(cert_pem),
        b64(key_pem),
    )
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
    write_private(&path, &kubeconfig(server_url, creds))?;
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
    // A client may present a certificate signed by berth's CA (a user from `berth
    // kubeconfig`); one without a certificate authenticates by token or is anonymous.
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(creds.ca_pem.as_bytes()) {
        roots
            .add(ca.map_err(|e| invalid(e.to_string()))?)
            .map_err(|e| invalid(e.to_string()))?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| invalid(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| invalid(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `router` over TLS on `listener` with kube-apiserver's connection bounds (see
/// [`crate::listener`]) until the process ends.
pub async fn serve(listener: TcpListener, router: Router, config: rustls::ServerConfig) {
    crate::listener::serve(listener, router, config, Default::default()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn secrets_are_private_and_the_ca_key_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let creds = load_or_create(&dir, &[]).unwrap();
        write_kubeconfig(&dir, "https://127.0.0.1:1", &creds).unwrap();
        assert_eq!(mode(&dir), 0o700);
        for f in ["server.key", "token", "kubeconfig", "ca.key"] {
            assert_eq!(mode(&dir.join(f)), 0o600, "{f}");
        }
        assert!(creds.ca_key_pem.is_some());
        let again = load_or_create(&dir, &[]).unwrap();
        assert_eq!(again.ca_key_pem, creds.ca_key_pem);
        assert_eq!(again.token, creds.token);
    }

    #[test]
    fn an_existing_wide_data_dir_is_narrowed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }
}

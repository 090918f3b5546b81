//! What each signer accepts (upstream's `isKubeletServing`, `isKubeletClient`,
//! `validAPIServerClientUsages`), in upstream's words.

use std::collections::BTreeSet;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

/// The parts of a request the signers check.
#[derive(Debug, Default)]
pub struct Request {
    common_name: String,
    organizations: Vec<String>,
    dns: usize,
    ips: usize,
    emails: usize,
    uris: usize,
}

/// Reads a PEM `CERTIFICATE REQUEST` and checks its signature (upstream's `ParseCSR`); `Err`
/// says why it cannot be read.
pub fn parse(pem_text: &str) -> Result<Request, String> {
    let (_, pem) =
        x509_parser::pem::parse_x509_pem(pem_text.as_bytes()).map_err(|e| e.to_string())?;
    if pem.label != "CERTIFICATE REQUEST" {
        return Err(format!(
            "PEM block type must be CERTIFICATE REQUEST, not {}",
            pem.label
        ));
    }
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
            .map_err(|e| e.to_string())?;
    csr.verify_signature()
        .map_err(|e| format!("the request's signature: {e}"))?;
    let info = &csr.certification_request_info;
    let mut r = Request {
        common_name: info
            .subject
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
            .unwrap_or("")
            .to_string(),
        organizations: info
            .subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect(),
        ..Request::default()
    };
    for name in general_names(&csr) {
        match name {
            GeneralName::DNSName(_) => r.dns += 1,
            GeneralName::IPAddress(_) => r.ips += 1,
            GeneralName::RFC822Name(_) => r.emails += 1,
            GeneralName::URI(_) => r.uris += 1,
            _ => {}
        }
    }
    Ok(r)
}

/// The subject alternative names the request asks for.
fn general_names<'a>(
    csr: &'a x509_parser::certification_request::X509CertificationRequest<'a>,
) -> impl Iterator<Item = &'a GeneralName<'a>> {
    csr.requested_extensions()
        .into_iter()
        .flatten()
        .filter_map(|ext| match ext {
            x509_parser::extensions::ParsedExtension::SubjectAlternativeName(san) => {
                Some(san.general_names.iter())
            }
            _ => None,
        })
        .flatten()
}

/// The request's DNS, IP, email and URI names, as the certificate carries them (upstream's
/// signer copies these four kinds).
pub fn subject_alt_names(
    csr: &x509_parser::certification_request::X509CertificationRequest<'_>,
) -> Result<Vec<rcgen::SanType>, String> {
    use rcgen::SanType;
    let bad = |kind: &str, e: rcgen::Error| format!("the request's {kind} name: {e}");
    let mut out = Vec::new();
    for name in general_names(csr) {
        match name {
            GeneralName::DNSName(d) => out.push(SanType::DnsName(
                (*d).try_into().map_err(|e| bad("DNS", e))?,
            )),
            GeneralName::RFC822Name(m) => out.push(SanType::Rfc822Name(
                (*m).try_into().map_err(|e| bad("email", e))?,
            )),
            GeneralName::URI(u) => {
                out.push(SanType::URI((*u).try_into().map_err(|e| bad("URI", e))?))
            }
            GeneralName::IPAddress(bytes) => {
                let ip = match bytes.len() {
                    4 => <[u8; 4]>::try_from(*bytes).map(std::net::IpAddr::from).ok(),
                    16 => <[u8; 16]>::try_from(*bytes)
                        .map(std::net::IpAddr::from)
                        .ok(),
                    _ => None,
                };
                out.push(SanType::IpAddress(ip.ok_or_else(|| {
                    "the request's IP name is not 4 or 16 bytes".to_string()
                })?));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Whether `signer` accepts the request `req` with `usages`; `Err` with the `Failed`
/// condition's message.
pub fn validate(signer: &str, req: &Request, usages: &[String]) -> Result<(), String> {
    let set: BTreeSet<&str> = usages.iter().map(String::as_str).collect();
    match signer {
        "kubernetes.io/kube-apiserver-client" => {
            let mut client_auth = false;
            for u in usages {
                match u.as_str() {
                    "digital signature" | "key encipherment" => {}
                    "client auth" => client_auth = true,
                    other => return Err(format!("invalid usage for client certificate: {other}")),
                }
            }
            if !client_auth {
                return Err("missing required usage for client certificate: client auth".into());
            }
            Ok(())
        }
        "kubernetes.io/kube-apiserver-client-kubelet" => {
            nodes_organization(req)?;
            no_sans(req, true)?;
            node_common_name(req)?;
            usages_match(&set, "client auth")
        }
        "kubernetes.io/kubelet-serving" => {
            nodes_organization(req)?;
            if req.dns == 0 && req.ips == 0 {
                return Err("DNS or IP subjectAltName is required".into());
            }
            no_sans(req, false)?;
            usages_match(&set, "server auth")?;
            node_common_name(req)
        }
        _ => Ok(()),
    }
}

fn nodes_organization(req: &Request) -> Result<(), String> {
    if req.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    Ok(())
}

fn node_common_name(req: &Request) -> Result<(), String> {
    if !req.common_name.starts_with("system:node:") {
        return Err("subject common name does not begin with system:node:".into());
    }
    Ok(())
}

/// No email or URI names; for a client, no DNS or IP names either.
fn no_sans(req: &Request, client: bool) -> Result<(), String> {
    if client && req.dns > 0 {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if req.emails > 0 {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if client && req.ips > 0 {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if req.uris > 0 {
        return Err("URI subjectAltNames are not allowed".into());
    }
    Ok(())
}

/// The usages of a kubelet certificate: digital signature and `purpose`, with or without
/// key encipherment (RSA keys).
fn usages_match(set: &BTreeSet<&str>, purpose: &str) -> Result<(), String> {
    let mut with_rsa: BTreeSet<&str> = ["digital signature", "key encipherment"].into();
    with_rsa.insert(purpose);
    let mut without: BTreeSet<&str> = ["digital signature"].into();
    without.insert(purpose);
    if *set == with_rsa || *set == without {
        return Ok(());
    }
    let list: Vec<&str> = with_rsa.into_iter().collect();
    Err(format!("usages did not match [{}]", list.join(" ")))
}

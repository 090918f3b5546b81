//! The CertificateSigningRequest signing controller (upstream
//! `pkg/controller/certificates/signer`): an approved, not failed request for one of the
//! `kubernetes.io/*` signers gets its certificate, signed by the cluster CA, in
//! `status.certificate`; a request its signer refuses gets the `Failed` condition
//! (`SignerValidationFailure`) instead. A request that cannot be parsed, or that the CA fails
//! to sign, is neither: upstream's signer returns the error and its work queue tries the request
//! again with back-off (`Sync <name> failed with : unable to parse csr ...` in its log), and
//! so does berth's ([`driver`]).
//!
//! The certificate's subject is the request's, every attribute as written, so a user with
//! several groups (several `O=`) keeps them all ([`subject`]).
//!
//! The engine ([`decide`], [`Signer::sign`]) is pure: the signer takes `now` and signs with
//! the key it was given; the driver ([`driver`]) watches requests and writes their status.

pub(crate) mod driver;
mod subject;
mod validation;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

/// The signers berth signs for, as kube-controller-manager with `--cluster-signing-*-file`.
pub const SIGNERS: &[&str] = &[
    "kubernetes.io/kube-apiserver-client",
    "kubernetes.io/kube-apiserver-client-kubelet",
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/legacy-unknown",
];

/// How far back a certificate's validity starts, for clocks that are a little behind
/// (upstream's 5 minutes).
const BACKDATE: TimeDelta = TimeDelta::minutes(5);

/// The shortest validity a request may ask for (`spec.expirationSeconds`).
const MIN_EXPIRATION_SECONDS: i64 = 600;

/// What to do with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not approved, failed, already signed, or for a signer that is not ours.
    Skip,
    /// Refused by its signer: the `Failed` condition's message.
    Fail(String),
    /// Not readable (not base64, not a PEM `CERTIFICATE REQUEST`, a bad signature): no
    /// condition, tried again later with back-off, as upstream's signer does; the error.
    Retry(String),
    /// To sign: the request (PEM), its usages and the validity it asks for.
    Sign {
        request_pem: String,
        usages: Vec<String>,
        expiration_seconds: Option<i64>,
    },
}

fn has_true_condition(csr: &Value, type_: &str) -> bool {
    csr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == type_ && c["status"] != "False")
}

/// What the signing controller does with `csr`.
pub fn decide(csr: &Value) -> Decision {
    let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
    if !SIGNERS.contains(&signer)
        || !has_true_condition(csr, "Approved")
        || has_true_condition(csr, "Denied")
        || has_true_condition(csr, "Failed")
        || csr["status"]["certificate"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    {
        return Decision::Skip;
    }
    use base64::Engine;
    let request = csr["spec"]["request"].as_str().unwrap_or("");
    let name = csr["metadata"]["name"].as_str().unwrap_or("");
    let Some(request_pem) = base64::engine::general_purpose::STANDARD
        .decode(request)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
    else {
        return Decision::Retry(format!(
            "unable to parse csr \"{name}\": request is not base64 PEM"
        ));
    };
    let request = match validation::parse(&request_pem) {
        Ok(r) => r,
        Err(e) => return Decision::Retry(format!("unable to parse csr \"{name}\": {e}")),
    };
    let usages: Vec<String> = csr["spec"]["usages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_string))
        .collect();
    if let Err(message) = validation::validate(signer, &request, &usages) {
        return Decision::Fail(message);
    }
    Decision::Sign {
        request_pem,
        usages,
        expiration_seconds: csr["spec"]["expirationSeconds"].as_i64(),
    }
}

/// The cluster CA, signing requests (`--cluster-signing-cert-file`/`-key-file`).
#[derive(Clone, Debug)]
pub struct Signer {
    pub ca_pem: String,
    pub ca_key_pem: String,
    /// `--cluster-signing-duration`: the longest validity (1 year).
    pub duration: TimeDelta,
}

impl Signer {
    /// A signer with upstream's default duration of one year.
    pub fn new(ca_pem: String, ca_key_pem: String) -> Signer {
        Signer {
            ca_pem,
            ca_key_pem,
            duration: TimeDelta::days(365),
        }
    }

    /// The validity a request gets: what it asks for (at least 10 minutes), at most the
    /// signer's duration.
    pub fn validity(&self, expiration_seconds: Option<i64>) -> TimeDelta {
        match expiration_seconds {
            Some(s) => TimeDelta::seconds(s.max(MIN_EXPIRATION_SECONDS)).min(self.duration),
            None => self.duration,
        }
    }

    /// The certificate (PEM) for the request `request_pem` with `usages`, valid from
    /// [`BACKDATE`] before `now` until the validity after `now`.
    pub fn sign(
        &self,
        request_pem: &str,
        usages: &[String],
        expiration_seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<String, String> {
        use rcgen::{
            CertificateParams, ExtendedKeyUsagePurpose as E, IsCa, Issuer, KeyPair,
            KeyUsagePurpose as K,
        };
        use x509_parser::prelude::FromDer;
        let key = KeyPair::from_pem(&self.ca_key_pem).map_err(|e| format!("the CA key: {e}"))?;
        let issuer = Issuer::from_ca_cert_pem(&self.ca_pem, key)
            .map_err(|e| format!("the CA certificate: {e}"))?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(request_pem.as_bytes())
            .map_err(|e| format!("unable to parse csr: {e}"))?;
        let (_, request) =
            x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents)
                .map_err(|e| format!("unable to parse csr: {e}"))?;
        let info = &request.certification_request_info;
        let public_key = rcgen::SubjectPublicKeyInfo::from_der(info.subject_pki.raw)
            .map_err(|e| format!("the request's public key: {e}"))?;
        let at = |t: DateTime<Utc>| {
            time::OffsetDateTime::from_unix_timestamp(t.timestamp())
                .map_err(|e| format!("validity out of range: {e}"))
        };
        // Upstream copies the request's subject and its DNS, IP, email and URI names; the
        // subject is put in once signed (see `subject`), rcgen writing a placeholder first.
        let mut p = CertificateParams::default();
        p.distinguished_name = subject::placeholder(info.subject.as_raw());
        p.subject_alt_names = validation::subject_alt_names(&request)?;
        p.not_before = at(now - BACKDATE)?;
        p.not_after = at(now + self.validity(expiration_seconds))?;
        p.is_ca = IsCa::ExplicitNoCa;
        p.key_usages = usages
            .iter()
            .filter_map(|u| match u.as_str() {
                "digital signature" | "signing" => Some(K::DigitalSignature),
                "content commitment" => Some(K::ContentCommitment),
                "key encipherment" => Some(K::KeyEncipherment),
                "key agreement" => Some(K::KeyAgreement),
                "data encipherment" => Some(K::DataEncipherment),
                "cert sign" => Some(K::KeyCertSign),
                "crl sign" => Some(K::CrlSign),
                "encipher only" => Some(K::EncipherOnly),
                "decipher only" => Some(K::DecipherOnly),
                _ => None,
            })
            .collect();
        p.extended_key_usages = usages
            .iter()
            .filter_map(|u| match u.as_str() {
                "any" => Some(E::Any),
                "server auth" => Some(E::ServerAuth),
                "client auth" => Some(E::ClientAuth),
                "code signing" => Some(E::CodeSigning),
                "email protection" => Some(E::EmailProtection),
                "timestamping" => Some(E::TimeStamping),
                "ocsp signing" => Some(E::OcspSigning),
                _ => None,
            })
            .collect();
        p.use_authority_key_identifier_extension = true;
        let cert = p
            .signed_by(&public_key, &issuer)
            .map_err(|e| format!("signing: {e}"))?;
        let der = subject::with_subject(cert.der(), info.subject.as_raw(), issuer.key())?;
        Ok(pem_certificate(&der))
    }
}

/// A DER certificate as PEM.
pub fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests;

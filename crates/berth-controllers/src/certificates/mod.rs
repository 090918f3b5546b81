//! The CertificateSigningRequest signing controller (upstream
//! `pkg/controller/certificates/signer`): an approved, not failed request for one of the
//! `kubernetes.io/*` signers gets its certificate, signed by the cluster CA, in
//! `status.certificate`; a request its signer refuses gets the `Failed` condition
//! (`SignerValidationFailure`) instead.
//!
//! The engine ([`decide`], [`Signer::sign`]) is pure: the signer takes `now` and signs with
//! the key it was given; the driver ([`driver`]) watches requests and writes their status.

pub(crate) mod driver;
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
    let Some(request_pem) = base64::engine::general_purpose::STANDARD
        .decode(request)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
    else {
        return Decision::Fail("unable to parse csr: request is not base64 PEM".into());
    };
    let usages: Vec<String> = csr["spec"]["usages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_string))
        .collect();
    if let Err(message) = validation::validate(signer, &request_pem, &usages) {
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
            CertificateSigningRequestParams, ExtendedKeyUsagePurpose as E, IsCa, Issuer, KeyPair,
            KeyUsagePurpose as K,
        };
        let key = KeyPair::from_pem(&self.ca_key_pem).map_err(|e| format!("the CA key: {e}"))?;
        let issuer = Issuer::from_ca_cert_pem(&self.ca_pem, key)
            .map_err(|e| format!("the CA certificate: {e}"))?;
        let mut csr = CertificateSigningRequestParams::from_pem(request_pem)
            .map_err(|e| format!("unable to parse csr: {e}"))?;
        let at = |t: DateTime<Utc>| {
            time::OffsetDateTime::from_unix_timestamp(t.timestamp())
                .map_err(|e| format!("validity out of range: {e}"))
        };
        let p = &mut csr.params;
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
        let cert = csr
            .signed_by(&issuer)
            .map_err(|e| format!("signing: {e}"))?;
        Ok(cert.pem())
    }
}

#[cfg(test)]
mod tests;

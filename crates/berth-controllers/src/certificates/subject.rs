//! The certificate's subject is the request's, as written: every attribute, several
//! Organizations (the user's groups) included. Upstream's signer copies the request's subject
//! into the certificate; rcgen's `DistinguishedName` keeps one value per attribute type and
//! refuses a multi-valued RDN, so rcgen builds and signs the certificate with a placeholder
//! subject ([`placeholder`]) and [`with_subject`] puts the request's subject in its place and
//! signs again with the CA's key (rcgen's [`rcgen::SigningKey`]). The DER is read and written
//! with yasna, the DER library rcgen itself writes with.
//!
//! The placeholder is not empty because rcgen (as Go) marks the subject alternative names
//! critical under an empty subject; a request whose subject is empty keeps rcgen's certificate
//! as it is, empty subject and critical names, as upstream's would be.

use rcgen::{DistinguishedName, DnType};
use yasna::models::ObjectIdentifier;
use yasna::ASN1Error;

/// Where the subject is in a TBSCertificate: after `[0] version`, `serialNumber`,
/// `signature`, `issuer` and `validity` (RFC 5280 4.1).
const SUBJECT_FIELD: usize = 5;

/// The DER of an empty Name.
const EMPTY_NAME: &[u8] = &[0x30, 0x00];

/// The common name of the placeholder subject.
const PLACEHOLDER_CN: &str = "berth: the request's subject goes here";

/// `id-at-commonName`.
const COMMON_NAME: &[u64] = &[2, 5, 4, 3];

/// The subject rcgen signs with for a request whose subject is `subject` (DER): a
/// placeholder to replace, or empty for an empty one.
pub fn placeholder(subject: &[u8]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    if subject != EMPTY_NAME {
        dn.push(DnType::CommonName, PLACEHOLDER_CN);
    }
    dn
}

/// The placeholder as rcgen writes it: one RDN, the common name as a UTF8String.
fn placeholder_der() -> Vec<u8> {
    yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_set(|w| {
                w.next().write_sequence(|w| {
                    w.next()
                        .write_oid(&ObjectIdentifier::from_slice(COMMON_NAME));
                    w.next().write_utf8_string(PLACEHOLDER_CN);
                });
            });
        })
    })
}

/// `certificate` (DER, signed by `key` with the [`placeholder`] of `subject`) with `subject`
/// (a DER Name) as its subject, signed again by `key`.
pub fn with_subject(
    certificate: &[u8],
    subject: &[u8],
    key: &impl rcgen::SigningKey,
) -> Result<Vec<u8>, String> {
    if subject == EMPTY_NAME {
        return Ok(certificate.to_vec());
    }
    let bad = |e: ASN1Error| format!("reading the signed certificate: {e}");
    let (tbs, algorithm) = yasna::parse_der(certificate, |r| {
        r.read_sequence(|r| {
            let tbs = r.next().read_der()?;
            let algorithm = r.next().read_der()?;
            r.next().read_bitvec_bytes()?;
            Ok((tbs, algorithm))
        })
    })
    .map_err(bad)?;
    let mut fields = yasna::parse_der(&tbs, |r| {
        r.read_sequence(|r| {
            let mut fields = Vec::new();
            while let Some(field) = r.read_optional(|r| r.read_der())? {
                fields.push(field);
            }
            Ok(fields)
        })
    })
    .map_err(bad)?;
    match fields.get_mut(SUBJECT_FIELD) {
        Some(field) if *field == placeholder_der() => *field = subject.to_vec(),
        _ => return Err("the signed certificate has no placeholder subject to replace".into()),
    }
    let tbs = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            for field in &fields {
                w.next().write_der(field);
            }
        })
    });
    let signature = key.sign(&tbs).map_err(|e| format!("signing: {e}"))?;
    Ok(yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_der(&tbs);
            w.next().write_der(&algorithm);
            w.next().write_bitvec_bytes(&signature, signature.len() * 8);
        })
    }))
}

use super::*;
use base64::Engine;
use rcgen::{CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
use serde_json::json;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-01-01T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn request(cn: &str, orgs: &[&str], dns: &[&str]) -> String {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    for o in orgs {
        p.distinguished_name.push(DnType::OrganizationName, *o);
    }
    p.subject_alt_names = dns
        .iter()
        .map(|d| SanType::DnsName((*d).try_into().unwrap()))
        .collect();
    p.serialize_request(&key).unwrap().pem().unwrap()
}

fn csr(
    signer: &str,
    pem: &str,
    usages: &[&str],
    conditions: serde_json::Value,
) -> serde_json::Value {
    json!({"spec": {"signerName": signer, "usages": usages,
        "request": base64::engine::general_purpose::STANDARD.encode(pem)},
        "status": {"conditions": conditions}})
}

fn approved() -> serde_json::Value {
    json!([{"type": "Approved", "status": "True"}])
}

fn ca() -> Signer {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "berth-ca");
    p.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = p.self_signed(&key).unwrap();
    let _ = Issuer::from_ca_cert_pem(
        &cert.pem(),
        KeyPair::from_pem(&key.serialize_pem()).unwrap(),
    )
    .unwrap();
    Signer::new(cert.pem(), key.serialize_pem())
}

#[test]
fn an_approved_client_request_is_signed_with_its_subject_and_validity() {
    let pem = request("alice", &["devs"], &[]);
    let c = csr(
        "kubernetes.io/kube-apiserver-client",
        &pem,
        &["client auth"],
        approved(),
    );
    let Decision::Sign {
        request_pem,
        usages,
        expiration_seconds,
    } = decide(&c)
    else {
        panic!("not signed: {:?}", decide(&c));
    };
    let signer = ca();
    let cert = signer
        .sign(&request_pem, &usages, Some(3600), now())
        .unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
    let x = pem.parse_x509().unwrap();
    let cn = x
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let o = x
        .subject()
        .iter_organization()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!((cn.as_str(), o.as_str()), ("alice", "devs"));
    let lifetime = x.validity().not_after.timestamp() - x.validity().not_before.timestamp();
    assert_eq!(lifetime, 3600 + 300);
    assert_eq!(expiration_seconds, None);
    let eku = x.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && !eku.server_auth);
}

#[test]
fn a_validity_is_at_least_ten_minutes_and_at_most_the_signers_duration() {
    let s = ca();
    assert_eq!(s.validity(Some(60)), TimeDelta::seconds(600));
    assert_eq!(s.validity(Some(10 * 365 * 86400)), TimeDelta::days(365));
    assert_eq!(s.validity(None), TimeDelta::days(365));
}

#[test]
fn requests_not_approved_or_not_ours_or_done_are_skipped() {
    let pem = request("alice", &[], &[]);
    let client = "kubernetes.io/kube-apiserver-client";
    assert_eq!(
        decide(&csr(client, &pem, &["client auth"], json!([]))),
        Decision::Skip
    );
    assert_eq!(
        decide(&csr(
            "example.com/other",
            &pem,
            &["client auth"],
            approved()
        )),
        Decision::Skip
    );
    let failed =
        json!([{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}]);
    assert_eq!(
        decide(&csr(client, &pem, &["client auth"], failed)),
        Decision::Skip
    );
    let mut signed = csr(client, &pem, &["client auth"], approved());
    signed["status"]["certificate"] = json!("LS0t");
    assert_eq!(decide(&signed), Decision::Skip);
}

#[test]
fn a_client_certificate_must_be_for_client_auth_only() {
    let pem = request("alice", &[], &[]);
    let client = "kubernetes.io/kube-apiserver-client";
    assert_eq!(
        decide(&csr(client, &pem, &["server auth"], approved())),
        Decision::Fail("invalid usage for client certificate: server auth".into())
    );
    assert_eq!(
        decide(&csr(client, &pem, &["digital signature"], approved())),
        Decision::Fail("missing required usage for client certificate: client auth".into())
    );
}

#[test]
fn kubelet_requests_must_name_a_node_in_system_nodes() {
    let kubelet = "kubernetes.io/kube-apiserver-client-kubelet";
    let usages = ["digital signature", "client auth"];
    let ok = request("system:node:n1", &["system:nodes"], &[]);
    assert!(matches!(
        decide(&csr(kubelet, &ok, &usages, approved())),
        Decision::Sign { .. }
    ));
    let not_nodes = request("system:node:n1", &["devs"], &[]);
    assert_eq!(
        decide(&csr(kubelet, &not_nodes, &usages, approved())),
        Decision::Fail("subject organization is not system:nodes".into())
    );
    let not_node = request("alice", &["system:nodes"], &[]);
    assert_eq!(
        decide(&csr(kubelet, &not_node, &usages, approved())),
        Decision::Fail("subject common name does not begin with system:node:".into())
    );
    let with_dns = request("system:node:n1", &["system:nodes"], &["n1.example"]);
    assert_eq!(
        decide(&csr(kubelet, &with_dns, &usages, approved())),
        Decision::Fail("DNS subjectAltNames are not allowed".into())
    );
    assert_eq!(
        decide(&csr(kubelet, &ok, &["client auth"], approved())),
        Decision::Fail(
            "usages did not match [client auth digital signature key encipherment]".into()
        )
    );
}

#[test]
fn serving_requests_need_a_dns_or_ip_name() {
    let serving = "kubernetes.io/kubelet-serving";
    let usages = ["digital signature", "key encipherment", "server auth"];
    let none = request("system:node:n1", &["system:nodes"], &[]);
    assert_eq!(
        decide(&csr(serving, &none, &usages, approved())),
        Decision::Fail("DNS or IP subjectAltName is required".into())
    );
    let named = request("system:node:n1", &["system:nodes"], &["n1.example"]);
    assert!(matches!(
        decide(&csr(serving, &named, &usages, approved())),
        Decision::Sign { .. }
    ));
}

/// A request whose subject has exactly the RDNs given (each a list of attributes, so a
/// multi-valued RDN as Go writes several O's is possible), signed with a P-256 key:
/// rcgen's own request builder keeps one value per attribute type.
fn request_with_subject(rdns: &[&[(&[u64], &str)]]) -> String {
    use rcgen::{PublicKeyData, SigningKey};
    use yasna::models::ObjectIdentifier;
    let key = KeyPair::generate().unwrap();
    let info = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_u8(0);
            w.next().write_sequence_of(|w| {
                for rdn in rdns {
                    w.next().write_set_of(|w| {
                        for (oid, value) in *rdn {
                            w.next().write_sequence(|w| {
                                w.next().write_oid(&ObjectIdentifier::from_slice(oid));
                                w.next().write_utf8_string(value);
                            });
                        }
                    });
                }
            });
            w.next().write_der(&key.subject_public_key_info());
            w.next()
                .write_tagged_implicit(yasna::Tag::context(0), |w| w.write_set(|_| {}));
        })
    });
    let signature = key.sign(&info).unwrap();
    // ecdsa-with-SHA256
    let algorithm = [
        0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02,
    ];
    let der = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_der(&info);
            w.next().write_der(&algorithm);
            w.next().write_bitvec_bytes(&signature, signature.len() * 8);
        })
    });
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        lines.join("\n")
    )
}

const CN: &[u64] = &[2, 5, 4, 3];
const O: &[u64] = &[2, 5, 4, 10];

/// Signs `pem` for the client signer; the certificate's CN, O's, and whether the CA's key
/// verifies it.
fn signed_subject(pem: &str) -> (Vec<String>, Vec<String>, bool) {
    let c = csr(
        "kubernetes.io/kube-apiserver-client",
        pem,
        &["client auth"],
        approved(),
    );
    let Decision::Sign {
        request_pem,
        usages,
        expiration_seconds,
    } = decide(&c)
    else {
        panic!("not signed: {:?}", decide(&c));
    };
    let signer = ca();
    let cert = signer
        .sign(&request_pem, &usages, expiration_seconds, now())
        .unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
    let x = pem.parse_x509().unwrap();
    let (_, ca_pem) = x509_parser::pem::parse_x509_pem(signer.ca_pem.as_bytes()).unwrap();
    let ca = ca_pem.parse_x509().unwrap();
    let verified = x.verify_signature(Some(ca.public_key())).is_ok();
    let cn = sorted(
        x.subject()
            .iter_common_name()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    let o = sorted(
        x.subject()
            .iter_organization()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    (cn, o, verified)
}

/// Sorted: a multi-valued RDN's values are in DER's order, not the writer's.
fn sorted(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = it.collect();
    v.sort();
    v
}

#[test]
fn every_organization_of_the_request_is_in_the_certificate() {
    // One RDN per O, as `openssl req -subj "/CN=alice/O=devs/O=ops"` writes them.
    let pem = request_with_subject(&[&[(CN, "alice")], &[(O, "devs")], &[(O, "ops")]]);
    assert_eq!(
        signed_subject(&pem),
        (
            vec!["alice".into()],
            vec!["devs".into(), "ops".into()],
            true
        )
    );
    // Both O's in one multi-valued RDN, as Go's x509 writes a pkix.Name.
    let pem = request_with_subject(&[&[(O, "devs"), (O, "ops")], &[(CN, "alice")]]);
    assert_eq!(
        signed_subject(&pem),
        (
            vec!["alice".into()],
            vec!["devs".into(), "ops".into()],
            true
        )
    );
}

#[test]
fn a_request_that_cannot_be_read_is_tried_again_not_failed() {
    let client = "kubernetes.io/kube-apiserver-client";
    let mut garbage = csr(client, "not a request", &["client auth"], approved());
    garbage["metadata"] = json!({"name": "junk"});
    let Decision::Retry(error) = decide(&garbage) else {
        panic!("not retried: {:?}", decide(&garbage));
    };
    assert!(
        error.starts_with("unable to parse csr \"junk\": "),
        "{error}"
    );
    let certificate = ca().ca_pem;
    let wrong_label = csr(client, &certificate, &["client auth"], approved());
    assert_eq!(
        decide(&wrong_label),
        Decision::Retry(
            "unable to parse csr \"\": PEM block type must be CERTIFICATE REQUEST, not CERTIFICATE"
                .into()
        )
    );
    let not_base64 = json!({"spec": {"signerName": client, "usages": ["client auth"],
        "request": "%%%"}, "status": {"conditions": approved()}});
    assert!(matches!(decide(&not_base64), Decision::Retry(_)));
}

//! Client certificates: the user a certificate names (CN = user, each O = a group), once the
//! TLS listener has verified it against berth's CA.

use crate::user::UserInfo;

/// The user of a DER certificate, or `None` if it cannot be read or names no one.
pub fn user_of(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

//! The `pod-template-hash` of a pod template (upstream `controller.ComputeHash`): 32-bit FNV-1a
//! over the template (here its canonical JSON, as berth stores it; upstream hashes Go's printed
//! struct), plus the collision count when there is one, as a decimal string safe-encoded into
//! letters and digits that cannot spell words (upstream `rand.SafeEncodeString`).

const FNV_OFFSET: u32 = 0x811c_9dc5;
const FNV_PRIME: u32 = 0x0100_0193;
/// Upstream's alphabet: no vowels, no 0, 1 or 3, so no bad words.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// FNV-1a, 32 bits.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(FNV_OFFSET, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(FNV_PRIME)
    })
}

/// Each byte mapped into [`ALPHANUMS`].
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
}

/// The hash of `template` (any JSON; keys are written sorted) with `collision_count`.
pub fn template_hash(template: &serde_json::Value, collision_count: Option<i32>) -> String {
    let mut bytes = serde_json::to_vec(template).unwrap_or_default();
    if let Some(c) = collision_count {
        bytes.extend_from_slice(c.to_string().as_bytes());
    }
    safe_encode(&fnv32a(&bytes).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv32a_matches_the_reference_vectors() {
        assert_eq!(fnv32a(b""), 0x811c_9dc5);
        assert_eq!(fnv32a(b"a"), 0xe40c_292c);
        assert_eq!(fnv32a(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn safe_encoding_uses_upstreams_alphabet() {
        // '0' is byte 48: 48 % 27 = 21 -> '4'.
        assert_eq!(safe_encode("0"), "4");
        assert_eq!(safe_encode("123"), "567");
    }

    #[test]
    fn the_hash_follows_the_template_and_the_collision_count() {
        let a = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let b = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}});
        assert_eq!(template_hash(&a, None), template_hash(&a.clone(), None));
        assert_ne!(template_hash(&a, None), template_hash(&b, None));
        assert_ne!(template_hash(&a, None), template_hash(&a, Some(1)));
        assert!(template_hash(&a, None)
            .bytes()
            .all(|c| ALPHANUMS.contains(&c)));
    }
}

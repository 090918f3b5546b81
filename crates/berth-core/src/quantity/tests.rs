use super::*;
use proptest::prelude::*;

fn q(s: &str) -> Quantity {
    match Quantity::parse(s) {
        Ok(q) => q,
        Err(e) => panic!("{s}: {e}"),
    }
}

#[test]
fn canonical_forms() {
    let cases = [
        ("0", "0"),
        ("100m", "100m"),
        ("1", "1"),
        ("1.5", "1500m"),
        ("1500m", "1500m"),
        ("1000m", "1"),
        ("0.1", "100m"),
        ("2", "2"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("1k", "1k"),
        ("1M", "1M"),
        ("2Gi", "2Gi"),
        ("500Mi", "500Mi"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Ki", "512"),
        ("1536", "1536"),
        ("1e3", "1e3"),
        ("1E3", "1e3"),
        ("1e6", "1e6"),
        ("1.5e3", "1500"),
        ("12e-3", "12e-3"),
        ("-1", "-1"),
        ("-100m", "-100m"),
        ("+1", "1"),
        ("01", "1"),
        ("0.0000000001", "1n"),
        ("1n", "1n"),
        ("1u", "1u"),
        ("1.", "1"),
        (".5", "500m"),
        (".", "0"),
        ("-", "0"),
        ("1000E", "1000E"),
        ("10Ei", "9223372036854775807"),
        ("0.1Ki", "102400m"),
        ("1Ki", "1Ki"),
        ("1025Ki", "1025Ki"),
        ("1.000", "1"),
        ("0Mi", "0"),
    ];
    for (input, want) in cases {
        assert_eq!(q(input).to_string(), want, "input {input}");
    }
}

#[test]
fn rejects_garbage_with_upstream_messages() {
    for bad in ["", "abc", "1x", "1.1.1", "1 Gi", "1e", "1Ki1", "1ee3"] {
        assert!(Quantity::parse(bad).is_err(), "{bad} should fail");
    }
    assert_eq!(Quantity::parse("1x").unwrap_err().to_string(), FORMAT_WRONG);
    assert_eq!(
        Quantity::parse("1K").unwrap_err().to_string(),
        "unable to parse quantity's suffix"
    );
    assert_eq!(Quantity::parse("1e").unwrap_err(), QuantityError::Suffix);
}

#[test]
fn values_round_up() {
    assert_eq!(q("100m").milli_value(), 100);
    assert_eq!(q("100m").value(), 1);
    assert_eq!(q("1n").milli_value(), 1);
    assert_eq!(q("1.5").milli_value(), 1500);
    assert_eq!(q("2Gi").value(), 2 << 30);
    assert_eq!(q("1e3").value(), 1000);
    assert_eq!(q("-100m").value(), -1);
    assert_eq!(q("1.5Gi").value(), 1_610_612_736);
    assert_eq!(parse_cpu_milli("250m"), Ok(250));
    assert_eq!(parse_bytes("128Mi"), Ok(128 << 20));
    assert_eq!(q("100Ei").value(), i64::MAX);
}

#[test]
fn equality_is_numeric() {
    assert_eq!(q("1"), q("1000m"));
    assert_eq!(q("1Ki"), q("1024"));
    assert!(q("1Gi") > q("1G"));
    assert_eq!(Quantity::from_milli(1500).to_string(), "1500m");
    assert_eq!(Quantity::from_bytes(1 << 30).to_string(), "1Gi");
    assert_eq!(Quantity::from_int(2000).to_string(), "2k");
}

#[test]
fn serde_accepts_strings_and_numbers() {
    let v: Quantity = serde_json::from_str("\"1.5\"").unwrap();
    assert_eq!(v.to_string(), "1500m");
    let v: Quantity = serde_json::from_str("2").unwrap();
    assert_eq!(serde_json::to_string(&v).unwrap(), "\"2\"");
    assert!(serde_json::from_str::<Quantity>("true").is_err());
}

fn suffix() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3",
        "e-3", "E6", "e0", "e9",
    ])
}

proptest! {
    #[test]
    fn display_round_trips(neg in any::<bool>(), int in 0u64..100_000_000, frac in proptest::option::of(0u32..1000), sfx in suffix()) {
        let s = match frac {
            Some(f) => format!("{}{int}.{f:03}{sfx}", if neg { "-" } else { "" }),
            None => format!("{}{int}{sfx}", if neg { "-" } else { "" }),
        };
        let parsed = Quantity::parse(&s).unwrap();
        let shown = parsed.to_string();
        let again = Quantity::parse(&shown).unwrap();
        prop_assert_eq!(again, parsed, "{} -> {}", s, shown);
        prop_assert_eq!(again.to_string(), shown);
    }

    #[test]
    fn never_panics(s in "\\PC{0,20}") {
        let _ = Quantity::parse(&s);
    }

    #[test]
    fn never_panics_numberish(s in "[-+]?[0-9.]{0,40}[eEinumkKMGTP]{0,3}[-+]?[0-9]{0,12}") {
        if let Ok(q) = Quantity::parse(&s) {
            let _ = (q.milli_value(), q.value(), q.to_string());
        }
    }
}

/// The integer paths the scheduler reads every request and allocatable through.
#[test]
fn integer_values() {
    let cases: &[(&str, i64, i64)] = &[
        ("100m", 100, 1),
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("0.1", 100, 1),
        ("500Mi", 500 * 1024 * 1024 * 1000, 500 * 1024 * 1024),
        ("32Gi", 32 * (1 << 30) * 1000, 32 * (1 << 30)),
        ("1k", 1_000_000, 1000),
        ("1e3", 1_000_000, 1000),
        ("1E3", 1_000_000, 1000),
        ("0", 0, 0),
        ("2000", 2_000_000, 2000),
        ("1n", 1, 1),
        ("250m", 250, 1),
    ];
    for (s, milli, val) in cases {
        let q = q(s);
        assert_eq!(q.milli_value(), *milli, "{s}");
        assert_eq!(q.value(), *val, "{s}");
        assert_eq!(q.is_positive(), *val > 0, "{s}");
    }
    // Upstream reads "." as zero; everything else here is not a quantity.
    for s in ["", "abc", "1.2.3", "1Zi", "1e", "--1"] {
        assert!(Quantity::parse(s).is_err(), "{s}");
    }
}

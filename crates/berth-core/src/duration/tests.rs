use super::*;
use proptest::prelude::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn go_vectors() {
    let ok = [
        ("0", Duration::ZERO),
        ("-0", Duration::ZERO),
        ("+0", Duration::ZERO),
        ("5s", ms(5_000)),
        ("30s", ms(30_000)),
        ("1478s", ms(1_478_000)),
        ("+5s", ms(5_000)),
        ("5.0s", ms(5_000)),
        ("5.6s", ms(5_600)),
        ("5.s", ms(5_000)),
        (".5s", ms(500)),
        ("1.004s", ms(1_004)),
        ("100.00100s", ms(100_001)),
        ("10ns", Duration::from_nanos(10)),
        ("11us", Duration::from_micros(11)),
        ("12\u{b5}s", Duration::from_micros(12)),
        ("12\u{3bc}s", Duration::from_micros(12)),
        ("13ms", ms(13)),
        ("15m", ms(900_000)),
        ("16h", ms(57_600_000)),
        ("3h30m", ms(12_600_000)),
        ("10.5s4m", ms(250_500)),
        ("1h1m1s1ms1us1ns", Duration::new(3661, 1_001_001)),
        ("1h2m3.5s", ms(3_723_500)),
        ("39h9m14.425s", ms(39 * 3_600_000 + 9 * 60_000 + 14_425)),
        ("52763797000ns", ms(52_763) + Duration::from_micros(797)),
        ("0.3333333333333333333h", Duration::from_secs(1200)),
        (
            "9223372036854775807ns",
            Duration::from_nanos(i64::MAX as u64),
        ),
        (" 1m ", ms(60_000)),
    ];
    for (text, want) in ok {
        assert_eq!(parse(text), Ok(want), "{text}");
    }
    for text in [
        "", "3", "-", "s", ".", "-.", ".s", "+.s", "1d", "1.5.s", "1s2", "40 s", "x",
    ] {
        assert!(
            matches!(parse(text), Err(DurationError::Invalid(_))),
            "{text}"
        );
    }
    for text in ["-5s", "-1h2m", "-.5s"] {
        assert_eq!(
            parse(text),
            Err(DurationError::Negative(text.into())),
            "{text}"
        );
    }
    for text in [
        "9223372036854775808ns",
        "9223372036854775807ns1ns",
        "3000000h",
    ] {
        assert_eq!(
            parse(text),
            Err(DurationError::Overflow(text.into())),
            "{text}"
        );
    }
}

#[test]
fn syntax_amendments() {
    assert_eq!(parse_with("15", Syntax::FLAG), Ok(ms(15_000)));
    assert_eq!(parse_with("1.5s", Syntax::FLAG), Ok(ms(1_500)));
    let whole = Syntax {
        bare_seconds: true,
        fractions: false,
    };
    assert_eq!(parse_with("7", whole), Ok(ms(7_000)));
    assert_eq!(parse_with("1m30s", whole), Ok(ms(90_000)));
    assert!(parse_with("1.5s", whole).is_err());
    assert!(parse_with("15", Syntax::GO).is_err());
}

/// Go's `Duration.String()`, to round-trip through the parser.
fn go_string(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        let (unit, per) = if nanos < 1_000 {
            ("ns", 1)
        } else if nanos < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", decimal(nanos, per));
    }
    let secs = nanos / 1_000_000_000;
    let (h, m) = (secs / 3600, secs / 60 % 60);
    let s = decimal(nanos % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

fn decimal(n: u128, per: u128) -> String {
    let (whole, frac) = (n / per, n % per);
    if frac == 0 {
        return whole.to_string();
    }
    let width = per.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

proptest! {
    #[test]
    fn go_strings_round_trip(nanos in 0u64..=i64::MAX as u64) {
        let d = Duration::from_nanos(nanos);
        prop_assert_eq!(parse(&go_string(d)), Ok(d));
    }

    #[test]
    fn components_add_up(h in 0u64..1000, m in 0u64..1000, s in 0u64..1000, ms in 0u64..1000, us in 0u64..1000, ns in 0u64..1000) {
        let text = format!("{h}h{m}m{s}s{ms}ms{us}us{ns}ns");
        let want = Duration::from_secs(h * 3600 + m * 60 + s)
            + Duration::from_nanos(ms * 1_000_000 + us * 1_000 + ns);
        prop_assert_eq!(parse(&text), Ok(want));
    }

    #[test]
    fn any_text_is_an_answer_not_a_panic(text in "\\PC{0,24}") {
        let _ = parse_with(&text, Syntax::FLAG);
    }

    #[test]
    fn unit_shaped_text_is_an_answer_not_a_panic(text in "[-+]?[0-9.]{0,25}(ns|us|ms|s|m|h|x)?([0-9.]{0,5}(s|m|h))?") {
        let _ = parse(&text);
    }

    #[test]
    fn bare_seconds_only_with_the_flag_syntax(secs in 1u64..1_000_000) {
        prop_assert_eq!(parse_with(&secs.to_string(), Syntax::FLAG), Ok(Duration::from_secs(secs)));
        prop_assert!(parse(&secs.to_string()).is_err());
    }
}

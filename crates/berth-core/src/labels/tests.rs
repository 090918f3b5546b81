use super::*;
use proptest::prelude::*;
use serde_json::json;

fn labels(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[test]
fn parse_and_match_table() {
    let l = labels(json!({"app": "web", "tier": "front", "n": "5"}));
    let cases: &[(&str, bool)] = &[
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app!=web", false),
        ("app!=db", true),
        ("missing!=x", true),
        ("app in (web,db)", true),
        ("app in (db)", false),
        ("app notin (db)", true),
        ("missing notin (db)", true),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("app=web,tier=front", true),
        ("app=web,tier=back", false),
        ("  app = web ,  tier in ( front , back )  ", true),
        ("n>4", true),
        ("n<5", false),
        ("x in (in,notin)", false),
        ("app in (web,,)", true),
    ];
    for (sel, want) in cases {
        let s = Selector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert_eq!(s.matches(&l), *want, "selector {sel:?}");
    }
}

#[test]
fn display_is_upstream_canonical() {
    let cases = [
        ("b=1,a in (z,y)", "a in (y,z),b=1"),
        ("!a", "!a"),
        ("a", "a"),
        ("a==b", "a==b"),
        ("a!=b", "a!=b"),
        ("a notin ()", "a notin ()"),
        ("a=", "a="),
        ("x>1", "x>1"),
    ];
    for (input, want) in cases {
        assert_eq!(Selector::parse(input).unwrap().to_string(), want);
    }
}

#[test]
fn parse_errors_use_upstream_messages() {
    let cases = [
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("x>a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"),
        (
            "-a=b",
            "unable to parse requirement: <nil>: Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            "a=-b",
            "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(
            Selector::parse(input).unwrap_err().message,
            want,
            "input {input:?}"
        );
    }
}

#[test]
fn label_selector_json() {
    let l = labels(json!({"app": "web", "env": "prod"}));
    assert!(Selector::from_label_selector(&json!({}))
        .unwrap()
        .matches(&l));
    assert!(Selector::from_label_selector(&json!({}))
        .unwrap()
        .is_everything());
    assert!(!Selector::from_label_selector(&Value::Null)
        .unwrap()
        .matches(&l));
    let s = Selector::from_label_selector(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "canary", "operator": "DoesNotExist"}
        ]
    }))
    .unwrap();
    assert!(s.matches(&l));
    assert_eq!(s.to_string(), "app=web,!canary,env in (prod,staging)");
    let err = Selector::from_label_selector(
        &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
    )
    .unwrap_err();
    assert_eq!(err.message, "\"Gt\" is not a valid label selector operator");
    let err = Selector::from_label_selector(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
    );
    assert!(Selector::from_label_selector(&json!({"matchLabels": {"app": 1}})).is_err());
}

#[test]
fn exact_match_and_fn_lookup() {
    let s = Selector::parse("app=web,tier in (x)").unwrap();
    assert_eq!(s.requires_exact_match("app"), Some("web"));
    assert_eq!(s.requires_exact_match("tier"), Some("x"));
    assert!(s.matches_fn(|k| match k {
        "app" => Some("web"),
        "tier" => Some("x"),
        _ => None,
    }));
    assert!(!Selector::nothing().matches_fn(|_| None));
}

fn key() -> impl Strategy<Value = String> {
    "([a-z]{1,5}\\.[a-z]{2,3}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?"
}
fn value() -> impl Strategy<Value = String> {
    "([A-Za-z0-9]([-A-Za-z0-9_.]{0,6}[A-Za-z0-9])?)?"
}
fn requirement() -> impl Strategy<Value = Requirement> {
    let op = prop::sample::select(vec![
        Operator::In,
        Operator::NotIn,
        Operator::Equals,
        Operator::DoubleEquals,
        Operator::NotEquals,
        Operator::Exists,
        Operator::DoesNotExist,
        Operator::GreaterThan,
        Operator::LessThan,
    ]);
    (
        key(),
        op,
        prop::collection::btree_set(value(), 1..4),
        0i64..50,
    )
        .prop_map(|(k, op, vals, n)| {
            let values = match op {
                Operator::In | Operator::NotIn => vals.into_iter().collect(),
                Operator::Exists | Operator::DoesNotExist => vec![],
                Operator::GreaterThan | Operator::LessThan => vec![n.to_string()],
                _ => vals.into_iter().take(1).collect(),
            };
            Requirement::new(&k, op, values).unwrap()
        })
}

proptest! {
    #[test]
    fn string_form_round_trips(reqs in prop::collection::vec(requirement(), 0..5)) {
        let mut sel = Selector::everything();
        sel.requirements = reqs;
        sel.requirements.sort_by(|a, b| a.key.cmp(&b.key));
        let shown = sel.to_string();
        let parsed = Selector::parse(&shown).unwrap();
        prop_assert_eq!(&parsed, &sel, "{}", shown);
    }

    #[test]
    fn selector_from_labels_matches_them(m in prop::collection::btree_map(key(), value(), 0..6)) {
        let map: Map<String, Value> = m.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        let sel = Selector::from_labels(&map);
        prop_assert!(sel.matches(&map));
        let reparsed = Selector::parse(&sel.to_string()).unwrap();
        prop_assert!(reparsed.matches(&map));
    }

    #[test]
    fn parse_never_panics(s in "\\PC{0,30}") {
        let _ = Selector::parse(&s);
    }

    #[test]
    fn parse_never_panics_symbols(s in "[a-z!=(), <>in]{0,30}") {
        let _ = Selector::parse(&s);
    }
}

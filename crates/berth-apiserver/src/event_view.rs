//! `events.k8s.io/v1` Events are a view of the core `v1` Events, as upstream serves them: one
//! storage (the core objects), with the fields renamed on the way in and out, so an event
//! written through either API is listed and watched through both.

use berth_api::registry::ResourceType;
use serde_json::{Map, Value};

/// (core/v1 field, events.k8s.io/v1 field) for every field the two name differently.
const RENAMED: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Whether `rt` is the `events.k8s.io` view.
pub fn is_view(rt: &ResourceType) -> bool {
    rt.group == "events.k8s.io" && rt.plural == "events"
}

/// A stored core Event as `events.k8s.io/v1` shows it.
pub fn to_view(event: &mut Value) {
    if let Value::Object(obj) = event {
        rename(obj, |(core, view)| (core, view));
    }
}

/// An `events.k8s.io/v1` Event as it is stored (core/v1).
pub fn to_core(event: &Value) -> Value {
    let mut core = event.clone();
    if let Value::Object(obj) = &mut core {
        rename(obj, |(core, view)| (view, core));
    }
    core
}

type Direction = fn((&'static str, &'static str)) -> (&'static str, &'static str);

fn rename(obj: &mut Map<String, Value>, direction: Direction) {
    for pair in RENAMED {
        let (from, to) = direction(pair);
        match obj.remove(from) {
            Some(v) => {
                obj.insert(to.to_string(), v);
            }
            None => {
                obj.remove(to);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn core_fields_take_their_events_v1_names() {
        let mut e = json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"},
                           "message": "m", "reason": "r", "count": 3,
                           "source": {"component": "kubelet"},
                           "firstTimestamp": "2026-01-01T00:00:00Z",
                           "lastTimestamp": "2026-01-01T00:01:00Z",
                           "reportingComponent": "kubelet", "reportingInstance": "n1",
                           "type": "Normal"});
        to_view(&mut e);
        assert_eq!(
            e,
            json!({"metadata": {"name": "e"}, "regarding": {"kind": "Pod"}, "note": "m",
                   "reason": "r", "deprecatedCount": 3,
                   "deprecatedSource": {"component": "kubelet"},
                   "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
                   "deprecatedLastTimestamp": "2026-01-01T00:01:00Z",
                   "reportingController": "kubelet", "reportingInstance": "n1",
                   "type": "Normal"})
        );
    }

    #[test]
    fn a_view_field_without_its_core_field_is_not_kept_twice() {
        // A core object carrying an events.k8s.io name keeps only what the core field says.
        let mut e = json!({"note": "stray", "message": "m"});
        to_view(&mut e);
        assert_eq!(e, json!({"note": "m"}));
    }

    fn field_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[a-z]{0,8}".prop_map(Value::from),
            Just(json!({"kind": "Pod", "name": "p"})),
        ]
    }

    proptest! {
        #[test]
        fn to_core_then_to_view_gives_the_view_back(
            fields in proptest::collection::btree_map(
                prop_oneof![
                    Just("regarding"), Just("note"), Just("deprecatedSource"),
                    Just("deprecatedFirstTimestamp"), Just("deprecatedLastTimestamp"),
                    Just("deprecatedCount"), Just("reportingController"), Just("reason"),
                    Just("action"), Just("eventTime"), Just("reportingInstance"),
                ],
                field_value(),
                0..8,
            )
        ) {
            let view: Map<String, Value> =
                fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let view = Value::Object(view);
            let mut back = to_core(&view);
            to_view(&mut back);
            prop_assert_eq!(back, view);
        }
    }
}

//! Serialization back to the v1 policy file format, so that a loaded policy can be written out,
//! shown (`berth explain`) and loaded again unchanged.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use super::{Policy, PredicateConfig, PredicateKind, PriorityConfig, PriorityKind};

impl Policy {
    /// The policy as a pretty-printed `kind: Policy`, `apiVersion: v1` JSON file.
    pub fn to_json(&self) -> String {
        // Serializing plain strings, numbers and booleans into a String cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Policy", 7)?;
        s.serialize_field("kind", "Policy")?;
        s.serialize_field("apiVersion", "v1")?;
        s.serialize_field("predicates", &self.predicates)?;
        s.serialize_field("priorities", &self.priorities)?;
        if !self.extenders.is_empty() {
            s.serialize_field("extenders", &self.extenders)?;
        }
        s.serialize_field(
            "hardPodAffinitySymmetricWeight",
            &self.hard_pod_affinity_symmetric_weight,
        )?;
        s.serialize_field(
            "alwaysCheckAllPredicates",
            &self.always_check_all_predicates,
        )?;
        s.end()
    }
}

/// `{"labels": [...], "presence": b}` or `{"label": "...", "presence": b}` bodies.
struct Body<'a> {
    key: &'static str,
    labels: Labels<'a>,
    presence: Option<bool>,
}

/// One label or a list of labels.
enum Labels<'a> {
    One(&'a str),
    Many(&'a [String]),
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut inner = serializer.serialize_map(Some(1))?;
        let body = BodyFields {
            labels: &self.labels,
            presence: self.presence,
        };
        inner.serialize_entry(self.key, &body)?;
        inner.end()
    }
}

/// The fields inside an argument kind.
struct BodyFields<'a> {
    labels: &'a Labels<'a>,
    presence: Option<bool>,
}

impl Serialize for BodyFields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self.labels {
            Labels::One(label) => map.serialize_entry("label", label)?,
            Labels::Many(labels) => map.serialize_entry("labels", labels)?,
        }
        if let Some(presence) = self.presence {
            map.serialize_entry("presence", &presence)?;
        }
        map.end()
    }
}

impl Serialize for PredicateConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        let argument = match &self.kind {
            PredicateKind::Builtin(_) => None,
            PredicateKind::ServiceAffinity { labels } => Some(Body {
                key: "serviceAffinity",
                labels: Labels::Many(labels),
                presence: None,
            }),
            PredicateKind::LabelsPresence { labels, presence } => Some(Body {
                key: "labelsPresence",
                labels: Labels::Many(labels),
                presence: Some(*presence),
            }),
        };
        if let Some(argument) = argument {
            map.serialize_entry("argument", &argument)?;
        }
        map.end()
    }
}

impl Serialize for PriorityConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("weight", &self.weight)?;
        let argument = match &self.kind {
            PriorityKind::Builtin(_) => None,
            PriorityKind::ServiceAntiAffinity { label } => Some(Body {
                key: "serviceAntiAffinity",
                labels: Labels::One(label),
                presence: None,
            }),
            PriorityKind::LabelPreference { label, presence } => Some(Body {
                key: "labelPreference",
                labels: Labels::One(label),
                presence: Some(*presence),
            }),
        };
        if let Some(argument) = argument {
            map.serialize_entry("argument", &argument)?;
        }
        map.end()
    }
}

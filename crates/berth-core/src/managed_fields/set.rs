//! Field sets: which paths of an object a manager owns, and their `FieldsV1` JSON form.
//!
//! A set is a trie of path elements. A node is a *member* when its own path is in the set (a
//! leaf field, or a list element itself: the `"."` of `FieldsV1`); a node that is not a member
//! is only there to reach its members.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One step of a path: a map field, an element of a keyed list, or a value of a set list.
///
/// The variant order is upstream's order of path elements (fields, keys, values), so a set
/// serializes in the same order as upstream's.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Element {
    /// `f:<name>`, printed `.name`.
    Field(String),
    /// `k:<key object as JSON, fields sorted>`, printed `[name="c"]`.
    Key(String),
    /// `v:<value as JSON>`, printed `[=<value>]`.
    Value(String),
}

impl Element {
    /// The element of a keyed list element whose key fields have these values.
    pub fn key(fields: &Map<String, Value>) -> Element {
        // serde_json's map keeps keys sorted, which is upstream's key order.
        Element::Key(Value::Object(fields.clone()).to_string())
    }

    /// The element of a set list holding `v`.
    pub fn value(v: &Value) -> Element {
        Element::Value(v.to_string())
    }

    fn fields_v1(&self) -> String {
        match self {
            Element::Field(name) => format!("f:{name}"),
            Element::Key(k) => format!("k:{k}"),
            Element::Value(v) => format!("v:{v}"),
        }
    }

    fn parse(s: &str) -> Result<Element, String> {
        let bad = || format!("invalid path element {s:?}");
        match s.split_once(':') {
            Some(("f", name)) => Ok(Element::Field(name.to_string())),
            Some(("k", key)) => match serde_json::from_str::<Value>(key) {
                // Re-encoded so that equal keys compare equal whatever the client's spacing.
                Ok(Value::Object(m)) if !m.is_empty() => Ok(Element::key(&m)),
                _ => Err(bad()),
            },
            Some(("v", value)) => serde_json::from_str::<Value>(value)
                .map(|v| Element::value(&v))
                .map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for Element {
    /// Upstream's path notation, as conflict messages print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Element::Field(name) => write!(f, ".{name}"),
            Element::Key(k) => {
                let fields: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            Element::Value(v) => write!(f, "[={v}]"),
        }
    }
}

/// A set of paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<Element, FieldSet>,
}

impl FieldSet {
    /// The set holding only the path that reaches this node.
    pub fn leaf() -> FieldSet {
        FieldSet {
            member: true,
            children: BTreeMap::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Whether this node's own path is in the set.
    pub fn is_member(&self) -> bool {
        self.member
    }

    pub fn set_member(&mut self, member: bool) {
        self.member = member;
    }

    pub fn child(&self, e: &Element) -> Option<&FieldSet> {
        self.children.get(e)
    }

    pub fn children(&self) -> impl Iterator<Item = (&Element, &FieldSet)> {
        self.children.iter()
    }

    /// Adds `child` under `e` (merged with what is there); an empty child adds nothing.
    pub fn insert_child(&mut self, e: Element, child: FieldSet) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(&e) {
            Some(existing) => existing.union_with(&child),
            None => {
                self.children.insert(e, child);
            }
        }
    }

    /// Adds the path `path` (relative to this node) as a member.
    pub fn insert(&mut self, path: &[Element]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (e, c) in &other.children {
            self.insert_child(e.clone(), c.clone());
        }
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// The members of `self` that are not members of `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (e, c) in &self.children {
            let d = match other.children.get(e) {
                Some(o) => c.difference(o),
                None => c.clone(),
            };
            out.insert_child(e.clone(), d);
        }
        out
    }

    /// The members of both.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (e, c) in &self.children {
            if let Some(o) = other.children.get(e) {
                out.insert_child(e.clone(), c.intersection(o));
            }
        }
        out
    }

    /// Every member path, in set order.
    pub fn paths(&self) -> Vec<Vec<Element>> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Vec<Element>, out: &mut Vec<Vec<Element>>) {
        if self.member && !prefix.is_empty() {
            out.push(prefix.clone());
        }
        for (e, c) in &self.children {
            prefix.push(e.clone());
            c.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` JSON of a set (the root is never a member).
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        for (e, c) in &self.children {
            m.insert(e.fields_v1(), c.node_json());
        }
        Value::Object(m)
    }

    fn node_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (e, c) in &self.children {
            m.insert(e.fields_v1(), c.node_json());
        }
        Value::Object(m)
    }

    /// Reads a `FieldsV1` document; anything else is an error naming what is wrong.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let mut set = FieldSet::parse_node(v)?;
        set.member = false;
        Ok(set)
    }

    fn parse_node(v: &Value) -> Result<FieldSet, String> {
        let m = v
            .as_object()
            .ok_or_else(|| format!("expected an object, got {v}"))?;
        let mut set = FieldSet {
            member: m.is_empty(),
            children: BTreeMap::new(),
        };
        for (k, c) in m {
            if k == "." {
                set.member = true;
                continue;
            }
            let child = FieldSet::parse_node(c)?;
            set.children.insert(Element::parse(k)?, child);
        }
        Ok(set)
    }
}

/// A path in upstream's notation: `.spec.containers[name="c"].image`.
pub fn path_string(path: &[Element]) -> String {
    path.iter().map(ToString::to_string).collect()
}

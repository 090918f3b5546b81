//! Field sets of values, the comparison of two values, and the removal of paths from a value,
//! typed by the strategic-merge list table: a list merged by key is a keyed list (`k:`), a list
//! merged as a set is a set list (`v:`), any other list is atomic (a leaf). Maps are granular.

use super::set::{Element, FieldSet};
use crate::patch::schema::{field, Kind, ListStrategy, Ty};
use serde_json::{Map, Value};

/// Map fields of the built-in kinds that are maps of values rather than structs: upstream marks
/// such a map itself (`"."`) in the set of the writer that added it.
const GRANULAR_MAPS: &[&str] = &[
    "labels",
    "annotations",
    "nodeSelector",
    "data",
    "binaryData",
    "stringData",
    "matchLabels",
    "limits",
    "requests",
    "capacity",
    "allocatable",
];

/// The type of the root of an object of `kind`.
pub(crate) fn root(kind: &str) -> Ty {
    Ty::Root(Kind::from_name(kind))
}

/// The set of every field `obj` sets (nulls are unset), list elements of keyed lists as members.
pub(crate) fn object_set(obj: &Map<String, Value>, ty: Ty) -> FieldSet {
    let mut set = FieldSet::default();
    for (name, v) in obj {
        if v.is_null() {
            continue;
        }
        let (cty, strategy) = field(ty, name);
        set.insert_child(Element::Field(name.clone()), value_set(v, cty, strategy));
    }
    set
}

/// The set of the node holding `v`: a leaf for scalars, empty objects and atomic lists.
fn value_set(v: &Value, ty: Ty, strategy: ListStrategy) -> FieldSet {
    match v {
        Value::Object(m) if !m.is_empty() => object_set(m, ty),
        Value::Array(items) if !items.is_empty() => match list_elements(items, strategy) {
            Some(elements) => {
                let mut set = FieldSet::default();
                for (e, item) in elements {
                    set.insert_child(e, element_set(item, ty));
                }
                set
            }
            None => FieldSet::leaf(),
        },
        _ => FieldSet::leaf(),
    }
}

/// A list element's own set: the element itself, and its fields when it is an object.
fn element_set(item: &Value, ty: Ty) -> FieldSet {
    let mut set = match item {
        Value::Object(m) => object_set(m, ty),
        _ => FieldSet::default(),
    };
    set.set_member(true);
    set
}

/// The path element of each item of a keyed or set list, or `None` when the list is atomic
/// (or an item lacks the key, which upstream would refuse: it is then owned whole).
fn list_elements(items: &[Value], strategy: ListStrategy) -> Option<Vec<(Element, &Value)>> {
    match strategy {
        ListStrategy::Atomic => None,
        ListStrategy::Merge { key: None } => Some(
            items
                .iter()
                .filter(|v| !v.is_object() && !v.is_array())
                .map(|v| (Element::value(v), v))
                .collect::<Vec<_>>(),
        )
        .filter(|e| e.len() == items.len()),
        ListStrategy::Merge { key: Some(key) } => items
            .iter()
            .map(|item| {
                let k = item.get(key).filter(|k| !k.is_null())?;
                let mut fields = Map::new();
                fields.insert(key.to_string(), k.clone());
                Some((Element::key(&fields), item))
            })
            .collect(),
    }
}

/// What changed from one value to another, as sets of paths.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// Paths set in the new value and not in the old.
    pub added: FieldSet,
    /// Leaf paths set in both, with different values.
    pub modified: FieldSet,
    /// Paths set in the old value and not in the new.
    pub removed: FieldSet,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Added and modified: what the writer of the new value set.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }
}

/// Compares two objects of the given root type.
pub(crate) fn compare(old: &Map<String, Value>, new: &Map<String, Value>, ty: Ty) -> Comparison {
    let mut c = Comparison::default();
    compare_objects(old, new, ty, &mut c);
    c
}

fn present<'a>(m: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
    m.get(k).filter(|v| !v.is_null())
}

fn compare_objects(old: &Map<String, Value>, new: &Map<String, Value>, ty: Ty, c: &mut Comparison) {
    for (name, nv) in new {
        if nv.is_null() {
            continue;
        }
        let (cty, strategy) = field(ty, name);
        let e = Element::Field(name.clone());
        match present(old, name) {
            None => c.added.insert_child(e, added_set(name, nv, cty, strategy)),
            Some(ov) => {
                let sub = compare_values(ov, nv, cty, strategy);
                c.added.insert_child(e.clone(), sub.added);
                c.modified.insert_child(e.clone(), sub.modified);
                c.removed.insert_child(e, sub.removed);
            }
        }
    }
    for (name, ov) in old {
        if ov.is_null() || present(new, name).is_some() {
            continue;
        }
        let (cty, strategy) = field(ty, name);
        c.removed.insert_child(
            Element::Field(name.clone()),
            added_set(name, ov, cty, strategy),
        );
    }
}

/// The set of a field that appears (or disappears) whole.
fn added_set(name: &str, v: &Value, ty: Ty, strategy: ListStrategy) -> FieldSet {
    let mut set = value_set(v, ty, strategy);
    if v.is_object() && GRANULAR_MAPS.contains(&name) {
        set.set_member(true);
    }
    set
}

fn compare_values(old: &Value, new: &Value, ty: Ty, strategy: ListStrategy) -> Comparison {
    let mut c = Comparison::default();
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            compare_objects(o, n, ty, &mut c);
        }
        (Value::Array(o), Value::Array(n)) => {
            match (list_elements(o, strategy), list_elements(n, strategy)) {
                (Some(oe), Some(ne)) => compare_lists(&oe, &ne, ty, &mut c),
                _ if old != new => c.modified = FieldSet::leaf(),
                _ => {}
            }
        }
        _ if old != new => c.modified = FieldSet::leaf(),
        _ => {}
    }
    c
}

fn find<'a>(list: &[(Element, &'a Value)], e: &Element) -> Option<&'a Value> {
    list.iter().find(|(k, _)| k == e).map(|(_, v)| *v)
}

fn compare_lists(old: &[(Element, &Value)], new: &[(Element, &Value)], ty: Ty, c: &mut Comparison) {
    for (e, nv) in new {
        match find(old, e) {
            None => c.added.insert_child(e.clone(), element_set(nv, ty)),
            Some(ov) => {
                if let (Value::Object(o), Value::Object(n)) = (ov, nv) {
                    let mut sub = Comparison::default();
                    compare_objects(o, n, ty, &mut sub);
                    c.added.insert_child(e.clone(), sub.added);
                    c.modified.insert_child(e.clone(), sub.modified);
                    c.removed.insert_child(e.clone(), sub.removed);
                }
            }
        }
    }
    for (e, ov) in old {
        if find(new, e).is_none() {
            c.removed.insert_child(e.clone(), element_set(ov, ty));
        }
    }
}

/// Removes from `obj` the member paths of `remove` that neither `keep` nor any path under them
/// in `keep` holds: a field a manager dropped goes unless someone else still owns it (or a
/// part of it). A granular map emptied this way goes too.
pub(crate) fn prune(obj: &mut Map<String, Value>, remove: &FieldSet, keep: &FieldSet, ty: Ty) {
    for (e, rm) in remove.children() {
        let Element::Field(name) = e else { continue };
        let kept = keep.child(e);
        if rm.is_member() && kept.is_none_or(FieldSet::is_empty) {
            obj.remove(name);
            continue;
        }
        let empty = FieldSet::default();
        let kept = kept.unwrap_or(&empty);
        let (cty, strategy) = field(ty, name);
        match obj.get_mut(name) {
            Some(Value::Object(m)) => {
                prune(m, rm, kept, cty);
                if m.is_empty() && GRANULAR_MAPS.contains(&name.as_str()) {
                    obj.remove(name);
                }
            }
            Some(Value::Array(items)) => prune_list(items, rm, kept, cty, strategy),
            _ => {}
        }
    }
}

fn prune_list(
    items: &mut Vec<Value>,
    remove: &FieldSet,
    keep: &FieldSet,
    ty: Ty,
    strategy: ListStrategy,
) {
    let Some(elements) = list_elements(items, strategy) else {
        return;
    };
    let elements: Vec<Element> = elements.into_iter().map(|(e, _)| e).collect();
    let mut drop = vec![false; items.len()];
    for (i, e) in elements.iter().enumerate() {
        let Some(rm) = remove.child(e) else { continue };
        let kept = keep.child(e);
        if rm.is_member() && kept.is_none_or(FieldSet::is_empty) {
            drop[i] = true;
        } else if let Some(Value::Object(m)) = items.get_mut(i) {
            let empty = FieldSet::default();
            prune(m, rm, kept.unwrap_or(&empty), ty);
        }
    }
    let mut i = 0;
    items.retain(|_| {
        i += 1;
        !drop[i - 1]
    });
}

//! Resource types made at run time, one per served version of a CustomResourceDefinition.
//!
//! Everything that routes, authorizes, prints and stores a request works with
//! `&'static ResourceType`, as the built-in kinds of [`crate::registry`] are. A custom kind's
//! entry is therefore made once and kept for the life of the process: [`resource_type`]
//! interns each distinct definition, so a definition seen again (another request, a replica
//! relisting, the same CRD created anew) gets the entry made before, and memory grows only
//! with the number of *distinct* definitions, which [`MAX_CUSTOM_KINDS`] bounds.

use crate::registry::{ResourceType, Subresource, TableKind, ALL_VERBS, GET_PATCH_UPDATE};
use crate::tables::{Column, CustomColumns};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// How many distinct custom kinds (a CRD version's names, scope, subresources and columns)
/// one process makes entries for. Each is a few hundred bytes kept for the life of the
/// process; 4096 is far over what clusters install (hundreds of CRDs, a few versions each)
/// while bounding what a client with CRD rights can make the server keep to about 2 MB.
pub const MAX_CUSTOM_KINDS: usize = 4096;

/// A printer column of a CRD version (`additionalPrinterColumns`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PrinterColumn {
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub ty: String,
    pub format: String,
    pub description: String,
    pub priority: u8,
    pub json_path: String,
}

/// What a served version of a CRD makes the server serve.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CustomKind {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Whether the `status` subresource is served.
    pub status: bool,
    /// Whether the `scale` subresource is served.
    pub scale: bool,
    /// The printer columns (none: `NAME AGE`).
    pub columns: Vec<PrinterColumn>,
}

/// `Name`, as upstream's Table of a custom resource describes it.
const NAME_COLUMN: Column = Column {
    name: "Name",
    ty: "string",
    format: "name",
    description: crate::tables::NAME_DESC,
    priority: 0,
};

/// The entry of `kind`, made the first time this definition is seen; `None` once
/// [`MAX_CUSTOM_KINDS`] distinct definitions have been made.
pub fn resource_type(kind: &CustomKind) -> Option<&'static ResourceType> {
    static MADE: OnceLock<Mutex<HashMap<CustomKind, &'static ResourceType>>> = OnceLock::new();
    let mut made = MADE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = made.get(kind) {
        return Some(rt);
    }
    if made.len() >= MAX_CUSTOM_KINDS {
        return None;
    }
    let rt: &'static ResourceType = Box::leak(Box::new(make(kind)));
    made.insert(kind.clone(), rt);
    Some(rt)
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn leak_all(v: &[String]) -> &'static [&'static str] {
    Box::leak(
        v.iter()
            .map(|s| leak(s))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    )
}

fn make(k: &CustomKind) -> ResourceType {
    let (group, version, kind) = (leak(&k.group), leak(&k.version), leak(&k.kind));
    let mut subresources = Vec::new();
    if k.status {
        subresources.push(Subresource {
            name: "status",
            group,
            version,
            kind,
            verbs: GET_PATCH_UPDATE,
        });
    }
    if k.scale {
        subresources.push(Subresource {
            name: "scale",
            group: "autoscaling",
            version: "v1",
            kind: "Scale",
            verbs: GET_PATCH_UPDATE,
        });
    }
    let mut columns = vec![NAME_COLUMN];
    let mut json_paths = Vec::new();
    for c in &k.columns {
        columns.push(Column {
            name: leak(&c.name),
            ty: leak(&c.ty),
            format: leak(&c.format),
            description: leak(&c.description),
            priority: c.priority,
        });
        json_paths.push(leak(&c.json_path));
    }
    if k.columns.is_empty() {
        columns.push(Column {
            name: "Age",
            ty: "date",
            format: "",
            description: crate::tables::AGE_DESC,
            priority: 0,
        });
        json_paths.push(".metadata.creationTimestamp");
    }
    let table = Box::leak(Box::new(CustomColumns {
        columns: Box::leak(columns.into_boxed_slice()),
        json_paths: Box::leak(json_paths.into_boxed_slice()),
    }));
    ResourceType {
        group,
        version,
        kind,
        plural: leak(&k.plural),
        singular: leak(&k.singular),
        namespaced: k.namespaced,
        short_names: leak_all(&k.short_names),
        categories: leak_all(&k.categories),
        subresources: Box::leak(subresources.into_boxed_slice()),
        table: TableKind::Custom(table),
        verbs: ALL_VERBS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> CustomKind {
        CustomKind {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            namespaced: true,
            short_names: vec!["wd".into()],
            categories: vec!["all".into()],
            status: true,
            scale: true,
            columns: vec![],
        }
    }

    #[test]
    fn the_same_definition_gets_the_same_entry_and_another_a_new_one() {
        let a = resource_type(&widgets()).unwrap();
        let b = resource_type(&widgets()).unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.api_version(), "example.com/v1");
        assert_eq!(a.short_names, ["wd"]);
        assert!(a.subresource("scale").is_some() && a.subresource("status").is_some());
        let mut cluster = widgets();
        cluster.namespaced = false;
        assert!(!std::ptr::eq(a, resource_type(&cluster).unwrap()));
    }

    #[test]
    fn a_kind_without_printer_columns_prints_name_and_age() {
        let rt = resource_type(&widgets()).unwrap();
        let TableKind::Custom(table) = rt.table else {
            panic!("a custom table")
        };
        let names: Vec<_> = table.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Age"]);
    }
}

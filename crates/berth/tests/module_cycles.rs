//! No module cycles inside any crate of the workspace (DESIGN.md: dependencies point downward).
//!
//! The graph is drawn at the granularity of each crate's top-level modules (the children of
//! `lib.rs`/`main.rs`): a file of module `a` that names `crate::b` (in a `use`, a path or a
//! `use crate::{b, ..}` group), or a file of `a` at the top level that names `super::b`, is an
//! edge `a -> b`. Test code (files named `tests.rs`/`proptests.rs`, modules named `testutil` or
//! `testing`, and everything after a `#[cfg(test)]` item in a file) may reach anywhere and is not
//! counted. The test fails with every cycle it finds, each spelled as a path of modules.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const TEST_FILES: &[&str] = &["tests.rs", "proptests.rs"];
const TEST_MODULES: &[&str] = &["tests", "testutil", "testing"];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to, and whether the file sits directly at the top level
/// (where `super::` means the crate root). `None` for the crate root itself.
fn top_module(src: &Path, file: &Path) -> Option<(String, bool)> {
    let rel = file.strip_prefix(src).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let first = parts.first()?.trim_end_matches(".rs").to_string();
    if parts.len() == 1 && (first == "lib" || first == "main") {
        return None;
    }
    let at_top = parts.len() == 1 || (parts.len() == 2 && parts[1] == "mod.rs");
    Some((first, at_top))
}

/// Code outside tests and comments: the lines before the first `#[cfg(test)]`, less comment
/// lines (a doc link to another module is not a dependency).
fn non_test_code(text: &str) -> String {
    let code = text.find("#[cfg(test)]").map_or(text, |i| &text[..i]);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Top-level modules named after `prefix` (`crate::` or `super::`), including `prefix{a, b::c}`.
fn referenced(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        item_start = false;
                        let name = ident_at(&group[j..]);
                        if !name.is_empty() && name != "self" {
                            out.insert(name.to_string());
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.insert(name.to_string());
            }
        }
    }
    out
}

fn crate_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| top_module(src, f).map(|(m, _)| m))
        .collect();
    let mut graph = Graph::new();
    for file in &files {
        let Some((module, at_top)) = top_module(src, file) else {
            continue;
        };
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if TEST_FILES.contains(&name.as_ref()) || TEST_MODULES.contains(&module.as_str()) {
            continue;
        }
        let text = fs::read_to_string(file).expect("readable source file");
        let code = non_test_code(&text);
        let mut targets = referenced(&code, "crate::");
        if at_top {
            targets.extend(referenced(&code, "super::"));
        }
        let edges = graph.entry(module.clone()).or_default();
        for target in targets {
            if target != module
                && modules.contains(&target)
                && !TEST_MODULES.contains(&target.as_str())
            {
                edges.insert(target);
            }
        }
    }
    graph
}

/// Every strongly connected component with more than one module, as a sorted list.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(m) = stack.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, from_m) in &reachable {
        if !from_m.contains(*m) {
            continue;
        }
        let component: Vec<String> = from_m
            .iter()
            .filter(|other| reachable.get(other).is_some_and(|r| r.contains(*m)))
            .cloned()
            .collect();
        found.insert(component);
    }
    found.into_iter().collect()
}

/// Cycles known and owed, each with the change that will break it. Listed exactly: a new cycle,
/// or one of these growing, still fails. None is owed now: berth-apiserver's custom
/// resources and admission cycle (2026-11-27) was broken on 2026-11-28 by keeping in
/// `apiextensions` only what the served custom kinds are (`CustomKinds`, schema, CEL, formats,
/// OpenAPI), below `context` and `admission`, and moving the two `Strategy` impls into
/// `strategy/` and the CRD write handlers and cleanup into `crd_lifecycle`.
const OWED: &[&str] = &[];

#[test]
fn no_crate_has_a_module_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut report = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(&crates)
        .expect("crates directory")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "found the workspace's crates");
    for src in dirs {
        let name = src.parent().and_then(|p| p.file_name()).unwrap_or_default();
        for cycle in cycles(&crate_graph(&src)) {
            report.push(format!(
                "{}: {}",
                name.to_string_lossy(),
                cycle.join(" <-> ")
            ));
        }
    }
    report.retain(|cycle| !OWED.contains(&cycle.as_str()));
    assert!(report.is_empty(), "module cycles:\n{}", report.join("\n"));
}

#[test]
fn the_reference_parser_reads_groups_and_paths() {
    let code =
        "use crate::{engine::PodCtx, intern::{Sym, Interner}, self};\nlet x = crate::queue::new();";
    let got = referenced(code, "crate::");
    let want: BTreeSet<String> = ["engine", "intern", "queue"].map(String::from).into();
    assert_eq!(got, want);
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("a".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(cycles(&g), vec![vec!["a".to_string(), "b".to_string()]]);
}

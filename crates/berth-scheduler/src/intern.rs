//! String interning: label keys and values, namespaces and resource names become `u32` symbols.

use std::collections::HashMap;

/// An interned string id. `EMPTY` is the empty string.
pub type Sym = u32;

/// The symbol of the empty string.
pub const EMPTY: Sym = 0;

/// Interns strings into dense ids; also remembers each string's integer parse (for `Gt`/`Lt`).
#[derive(Debug, Clone)]
pub struct Interner {
    map: HashMap<Box<str>, Sym>,
    strs: Vec<Box<str>>,
    ints: Vec<Option<i64>>,
}

impl Default for Interner {
    fn default() -> Self {
        let mut i = Interner {
            map: HashMap::new(),
            strs: Vec::new(),
            ints: Vec::new(),
        };
        i.intern("");
        i
    }
}

impl Interner {
    /// Returns the id of `s`, adding it if new.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = self.strs.len() as Sym;
        self.strs.push(s.into());
        self.ints.push(s.parse::<i64>().ok());
        self.map.insert(s.into(), id);
        id
    }
    /// The id of `s` if it was interned.
    pub fn get(&self, s: &str) -> Option<Sym> {
        self.map.get(s).copied()
    }
    /// The string of an id (`""` for an unknown id).
    pub fn resolve(&self, id: Sym) -> &str {
        self.strs.get(id as usize).map(|s| &**s).unwrap_or("")
    }
    /// The integer parse of an interned string.
    pub fn int(&self, id: Sym) -> Option<i64> {
        self.ints.get(id as usize).copied().flatten()
    }
    /// Number of interned strings.
    pub fn len(&self) -> usize {
        self.strs.len()
    }
    /// Always false (the empty string is interned at creation).
    pub fn is_empty(&self) -> bool {
        self.strs.is_empty()
    }
}

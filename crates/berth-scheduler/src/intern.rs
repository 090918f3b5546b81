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

/// A fast non-cryptographic hasher for the cache's integer-keyed indexes (FxHash).
#[derive(Debug, Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.hash = (self.hash.rotate_left(5) ^ i).wrapping_mul(SEED);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A `HashMap` with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
/// A `HashSet` with [`FxHasher`].
pub type FxSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<FxHasher>>;

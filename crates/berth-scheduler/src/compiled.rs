//! Compact internal forms built once per object change: labels, selectors, node selector terms,
//! taints, tolerations and integer resources.

use crate::intern::{Interner, Sym, EMPTY};
use crate::model::{LabelSelector, NodeSelectorTerm, Quantity, Taint, Toleration};
use crate::quantity::ParsedQuantity;
use berth_core::taints::{self, Operator};
use std::collections::BTreeMap;

/// Labels as `(key, value)` symbol pairs sorted by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels(pub Vec<(Sym, Sym)>);

impl Labels {
    /// Compiles a label map.
    pub fn compile(map: &BTreeMap<String, String>, i: &mut Interner) -> Labels {
        let mut v: Vec<(Sym, Sym)> = map
            .iter()
            .map(|(k, v)| (i.intern(k), i.intern(v)))
            .collect();
        v.sort_unstable();
        Labels(v)
    }
    /// The value for `key`.
    #[inline]
    pub fn get(&self, key: Sym) -> Option<Sym> {
        if self.0.len() <= 8 {
            self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
        } else {
            self.0
                .binary_search_by_key(&key, |(k, _)| *k)
                .ok()
                .map(|ix| self.0[ix].1)
        }
    }
    /// True if `key` is present.
    #[inline]
    pub fn has(&self, key: Sym) -> bool {
        self.get(key).is_some()
    }
}

/// A selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Value in set.
    In,
    /// Value not in set (or key absent).
    NotIn,
    /// Key present.
    Exists,
    /// Key absent.
    DoesNotExist,
    /// Integer value greater than.
    Gt,
    /// Integer value less than.
    Lt,
}

/// One compiled requirement.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Req {
    /// Operator.
    pub op: Op,
    /// Key.
    pub key: Sym,
    /// Sorted values.
    pub values: Vec<Sym>,
    /// Parsed bound for Gt/Lt.
    pub bound: i64,
}

impl Req {
    fn compile(
        key: &str,
        op: &str,
        values: &[String],
        node: bool,
        i: &mut Interner,
    ) -> Option<Req> {
        let op = match op {
            "In" => Op::In,
            "NotIn" => Op::NotIn,
            "Exists" => Op::Exists,
            "DoesNotExist" => Op::DoesNotExist,
            "Gt" if node => Op::Gt,
            "Lt" if node => Op::Lt,
            _ => return None,
        };
        let mut bound = 0;
        match op {
            Op::In | Op::NotIn if values.is_empty() => return None,
            Op::Exists | Op::DoesNotExist if !values.is_empty() => return None,
            Op::Gt | Op::Lt => {
                if values.len() != 1 {
                    return None;
                }
                bound = values[0].parse::<i64>().ok()?;
            }
            _ => {}
        }
        let mut vals: Vec<Sym> = if matches!(op, Op::Gt | Op::Lt) {
            Vec::new()
        } else {
            values.iter().map(|v| i.intern(v)).collect()
        };
        vals.sort_unstable();
        vals.dedup();
        Some(Req {
            op,
            key: i.intern(key),
            values: vals,
            bound,
        })
    }

    /// Evaluates against labels.
    #[inline]
    pub fn matches(&self, labels: &Labels, i: &Interner) -> bool {
        let v = labels.get(self.key);
        match self.op {
            Op::In => v.is_some_and(|v| self.values.contains(&v)),
            Op::NotIn => v.is_none_or(|v| !self.values.contains(&v)),
            Op::Exists => v.is_some(),
            Op::DoesNotExist => v.is_none(),
            Op::Gt => v.and_then(|v| i.int(v)).is_some_and(|n| n > self.bound),
            Op::Lt => v.and_then(|v| i.int(v)).is_some_and(|n| n < self.bound),
        }
    }
}

/// A compiled label selector. `nothing` marks a nil or invalid selector, which matches no object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Selector {
    /// Requirements (ANDed), sorted.
    pub reqs: Vec<Req>,
    /// Matches nothing.
    pub nothing: bool,
}

impl Selector {
    /// A selector that matches nothing.
    pub fn nothing() -> Selector {
        Selector {
            reqs: Vec::new(),
            nothing: true,
        }
    }
    /// Compiles a `LabelSelector` (None = nothing).
    pub fn compile(sel: Option<&LabelSelector>, i: &mut Interner) -> Selector {
        let Some(sel) = sel else {
            return Selector::nothing();
        };
        let mut reqs = Vec::new();
        for (k, v) in &sel.match_labels {
            reqs.push(Req {
                op: Op::In,
                key: i.intern(k),
                values: vec![i.intern(v)],
                bound: 0,
            });
        }
        for e in &sel.match_expressions {
            match Req::compile(&e.key, &e.operator, &e.values, false, i) {
                Some(r) => reqs.push(r),
                None => return Selector::nothing(),
            }
        }
        reqs.sort();
        reqs.dedup();
        Selector {
            reqs,
            nothing: false,
        }
    }
    /// Compiles a map selector (`SelectorFromSet`): empty map selects everything.
    pub fn from_map(map: &BTreeMap<String, String>, i: &mut Interner) -> Selector {
        let mut reqs: Vec<Req> = map
            .iter()
            .map(|(k, v)| Req {
                op: Op::In,
                key: i.intern(k),
                values: vec![i.intern(v)],
                bound: 0,
            })
            .collect();
        reqs.sort();
        Selector {
            reqs,
            nothing: false,
        }
    }
    /// True if it selects the labels.
    #[inline]
    pub fn matches(&self, labels: &Labels, i: &Interner) -> bool {
        !self.nothing && self.reqs.iter().all(|r| r.matches(labels, i))
    }
    /// True if it has no requirements (and is not `nothing`): selects everything.
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.reqs.is_empty()
    }
    /// An exact `(key, value)` every selected object must carry, usable as an index key.
    pub fn index_pair(&self) -> Option<(Sym, Sym)> {
        if self.nothing {
            return None;
        }
        self.reqs
            .iter()
            .find(|r| r.op == Op::In && r.values.len() == 1)
            .map(|r| (r.key, r.values[0]))
    }
}

/// A compiled node selector term (expressions and `metadata.name` fields ANDed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeTerm {
    /// Label requirements.
    pub reqs: Vec<Req>,
    /// `metadata.name` requirements: (In?, names).
    pub name_reqs: Vec<(bool, Vec<Sym>)>,
    /// Term never matches (empty, or invalid operator/field).
    pub never: bool,
}

impl NodeTerm {
    /// Compiles a node selector term.
    pub fn compile(t: &NodeSelectorTerm, i: &mut Interner) -> NodeTerm {
        let mut out = NodeTerm::default();
        if t.match_expressions.is_empty() && t.match_fields.is_empty() {
            out.never = true;
            return out;
        }
        for e in &t.match_expressions {
            match Req::compile(&e.key, &e.operator, &e.values, true, i) {
                Some(r) => out.reqs.push(r),
                None => out.never = true,
            }
        }
        for f in &t.match_fields {
            let ok = f.key == "metadata.name" && f.values.len() == 1;
            match (ok, f.operator.as_str()) {
                (true, "In") => out.name_reqs.push((true, vec![i.intern(&f.values[0])])),
                (true, "NotIn") => out.name_reqs.push((false, vec![i.intern(&f.values[0])])),
                _ => out.never = true,
            }
        }
        out
    }
    /// True if the node (labels, name symbol) satisfies the term.
    #[inline]
    pub fn matches(&self, labels: &Labels, name: Sym, i: &Interner) -> bool {
        !self.never
            && self.reqs.iter().all(|r| r.matches(labels, i))
            && self
                .name_reqs
                .iter()
                .all(|(is_in, names)| names.contains(&name) == *is_in)
    }
}

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    /// `NoSchedule`.
    NoSchedule,
    /// `PreferNoSchedule`.
    PreferNoSchedule,
    /// `NoExecute`.
    NoExecute,
    /// Anything else (never filters).
    Other,
}

impl Effect {
    fn parse(s: &str) -> Effect {
        match s {
            "NoSchedule" => Effect::NoSchedule,
            "PreferNoSchedule" => Effect::PreferNoSchedule,
            "NoExecute" => Effect::NoExecute,
            _ => Effect::Other,
        }
    }
}

/// A compiled taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CTaint {
    /// Key.
    pub key: Sym,
    /// Value.
    pub value: Sym,
    /// Effect.
    pub effect: Effect,
}

impl CTaint {
    /// Compiles a taint.
    pub fn compile(t: &Taint, i: &mut Interner) -> CTaint {
        CTaint {
            key: i.intern(&t.key),
            value: i.intern(&t.value),
            effect: Effect::parse(&t.effect),
        }
    }
    /// This taint as the shared rule reads it.
    #[inline]
    fn rule(&self) -> taints::Taint<Sym, Effect> {
        taints::Taint {
            key: self.key,
            value: self.value,
            effect: self.effect,
        }
    }
}

/// A compiled toleration. `effect: None` tolerates any effect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CToleration {
    /// Key (EMPTY = any key).
    pub key: Sym,
    /// `Exists` operator.
    pub exists: bool,
    /// Value for `Equal`.
    pub value: Sym,
    /// Effect (None = any).
    pub effect: Option<Effect>,
    /// Operator neither Equal nor Exists: tolerates nothing.
    pub invalid: bool,
}

impl CToleration {
    /// Compiles a toleration.
    pub fn compile(t: &Toleration, i: &mut Interner) -> CToleration {
        let operator = Operator::parse(&t.operator);
        let (exists, invalid) = (operator == Operator::Exists, operator == Operator::Unknown);
        CToleration {
            key: i.intern(&t.key),
            exists,
            value: i.intern(&t.value),
            effect: if t.effect.is_empty() {
                None
            } else {
                Some(Effect::parse(&t.effect))
            },
            invalid,
        }
    }
    /// True if it tolerates the taint (berth-core's rule, applied to interned strings).
    #[inline]
    pub fn tolerates(&self, t: &CTaint) -> bool {
        taints::tolerates(&self.rule(), &t.rule())
    }
    /// This toleration as the shared rule reads it.
    #[inline]
    fn rule(&self) -> taints::Toleration<Sym, Effect> {
        let operator = if self.invalid {
            Operator::Unknown
        } else if self.exists {
            Operator::Exists
        } else {
            Operator::Equal
        };
        taints::Toleration {
            key: (self.key != EMPTY).then_some(self.key),
            operator,
            value: self.value,
            effect: self.effect,
        }
    }
}

/// True if some toleration tolerates the taint.
#[inline]
pub fn tolerated(tols: &[CToleration], t: &CTaint) -> bool {
    tols.iter().any(|x| x.tolerates(t))
}

/// Integer resources: cpu in millicores, memory and ephemeral-storage in bytes, and scalar
/// (extended, hugepages, attachable) resources as sorted `(name, value)` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Resources {
    /// Millicores.
    pub cpu: i64,
    /// Bytes.
    pub memory: i64,
    /// Bytes.
    pub ephemeral: i64,
    /// Other resources by interned name.
    pub scalars: Vec<(Sym, i64)>,
}

impl Resources {
    /// Compiles a resource list; returns the resources and the `pods` count if present.
    pub fn compile(map: &BTreeMap<String, Quantity>, i: &mut Interner) -> (Resources, Option<i64>) {
        let mut r = Resources::default();
        let mut pods = None;
        for (name, q) in map {
            let Ok(p) = ParsedQuantity::parse(&q.text()) else {
                continue;
            };
            match name.as_str() {
                "cpu" => r.cpu = p.milli_value(),
                "memory" => r.memory = p.value(),
                "ephemeral-storage" => r.ephemeral = p.value(),
                "pods" => pods = Some(p.value()),
                other => r.set_scalar(i.intern(other), p.value()),
            }
        }
        (r, pods)
    }
    /// The scalar value (0 when absent).
    #[inline]
    pub fn scalar(&self, name: Sym) -> i64 {
        self.scalars
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, v)| *v)
    }
    fn set_scalar(&mut self, name: Sym, v: i64) {
        match self.scalars.binary_search_by_key(&name, |(n, _)| *n) {
            Ok(ix) => self.scalars[ix].1 = v,
            Err(ix) => self.scalars.insert(ix, (name, v)),
        }
    }
    /// Adds `o` (or subtracts when `sign` is -1).
    pub fn add(&mut self, o: &Resources, sign: i64) {
        // Saturating: a request near the i64 bound (a quantity such as `cpu: 1e16`) must count
        // as huge, never wrap around to a negative that fits anywhere.
        self.cpu = self.cpu.saturating_add(sign.saturating_mul(o.cpu));
        self.memory = self.memory.saturating_add(sign.saturating_mul(o.memory));
        self.ephemeral = self
            .ephemeral
            .saturating_add(sign.saturating_mul(o.ephemeral));
        for (n, v) in &o.scalars {
            let cur = self.scalar(*n);
            self.set_scalar(*n, cur.saturating_add(sign.saturating_mul(*v)));
        }
        self.scalars.retain(|(_, v)| *v != 0);
    }
    /// Per-resource max.
    pub fn max_with(&mut self, o: &Resources) {
        self.cpu = self.cpu.max(o.cpu);
        self.memory = self.memory.max(o.memory);
        self.ephemeral = self.ephemeral.max(o.ephemeral);
        for (n, v) in &o.scalars {
            let cur = self.scalar(*n);
            if *v > cur {
                self.set_scalar(*n, *v);
            }
        }
    }
    /// True if every resource is zero.
    pub fn is_zero(&self) -> bool {
        self.cpu == 0
            && self.memory == 0
            && self.ephemeral == 0
            && self.scalars.iter().all(|(_, v)| *v == 0)
    }
}

//! Whether a toleration tolerates a taint: the one rule every component applies (upstream
//! `Toleration.ToleratesTaint`; `shared/spec/scheduler.md` §4.2).
//!
//! The rule is generic over how keys, values and effects are held, so the scheduler can apply it
//! to its interned form and the controllers to API strings: callers describe a toleration as a
//! [`Toleration`] and a taint as a [`Taint`] and call [`tolerates`].

/// A toleration's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `Exists`: any value.
    Exists,
    /// `Equal` (or empty, which defaults to it): the values must be equal.
    Equal,
    /// Anything else: tolerates nothing.
    Unknown,
}

impl Operator {
    /// Reads an operator as the API writes it (`""` is `Equal`).
    pub fn parse(s: &str) -> Operator {
        match s {
            "Exists" => Operator::Exists,
            "" | "Equal" => Operator::Equal,
            _ => Operator::Unknown,
        }
    }
}

/// What the rule reads of a taint: `K` holds keys and values, `E` effects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taint<K, E> {
    pub key: K,
    pub value: K,
    pub effect: E,
}

/// What the rule reads of a toleration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toleration<K, E> {
    /// `None`: an empty key, which (with `Exists`) matches every key.
    pub key: Option<K>,
    pub operator: Operator,
    pub value: K,
    /// `None`: an empty effect, which matches every effect.
    pub effect: Option<E>,
}

/// True if toleration `t` tolerates taint `x`: the effect is empty or equal, the key is empty or
/// equal, and the operator is `Exists` or `Equal` with equal values.
/// `tolerationSeconds` does not matter here.
///
/// ```
/// use berth_core::taints::{tolerates, Operator, Taint, Toleration};
/// let taint = Taint { key: "dedicated", value: "user1", effect: "NoSchedule" };
/// let any = Toleration { key: None, operator: Operator::Exists, value: "", effect: None };
/// assert!(tolerates(&any, &taint));
/// ```
#[inline]
pub fn tolerates<K: PartialEq, E: PartialEq>(t: &Toleration<K, E>, x: &Taint<K, E>) -> bool {
    t.effect.as_ref().is_none_or(|e| *e == x.effect)
        && t.key.as_ref().is_none_or(|k| *k == x.key)
        && match t.operator {
            Operator::Exists => true,
            Operator::Equal => t.value == x.value,
            Operator::Unknown => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint<'a>(key: &'a str, value: &'a str, effect: &'a str) -> Taint<&'a str, &'a str> {
        Taint { key, value, effect }
    }

    fn toleration<'a>(
        key: &'a str,
        operator: &str,
        value: &'a str,
        effect: &'a str,
    ) -> Toleration<&'a str, &'a str> {
        Toleration {
            key: (!key.is_empty()).then_some(key),
            operator: Operator::parse(operator),
            value,
            effect: (!effect.is_empty()).then_some(effect),
        }
    }

    #[test]
    fn upstream_rule() {
        let x = taint("dedicated", "user1", "NoSchedule");
        let cases = [
            (
                toleration("dedicated", "Equal", "user1", "NoSchedule"),
                true,
            ),
            (toleration("dedicated", "", "user1", "NoSchedule"), true),
            (
                toleration("dedicated", "Equal", "user2", "NoSchedule"),
                false,
            ),
            (toleration("dedicated", "Exists", "", "NoSchedule"), true),
            (toleration("dedicated", "Exists", "", ""), true),
            (toleration("dedicated", "Equal", "user1", ""), true),
            (
                toleration("dedicated", "Equal", "user1", "NoExecute"),
                false,
            ),
            (toleration("other", "Exists", "", ""), false),
            (toleration("", "Exists", "", ""), true),
            (toleration("", "Exists", "", "NoExecute"), false),
            // An empty key with Equal matches every key, but only the empty value.
            (toleration("", "Equal", "user1", ""), true),
            (toleration("", "Equal", "", ""), false),
            (toleration("dedicated", "Gt", "user1", "NoSchedule"), false),
        ];
        for (t, want) in cases {
            assert_eq!(tolerates(&t, &x), want, "{t:?}");
        }
    }
}

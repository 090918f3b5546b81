//! CheckNodeLabelPresence (`labelsPresence` argument): label keys present or absent.

use super::unit::{Argument, FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::ctx::PodCtx;
use crate::intern::Sym;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "CheckNodeLabelPresence",
    aliases: &[],
    order: 10,
    argument: Some(Argument::LabelsPresence),
    reasons: &[&LABELS_PRESENCE_VIOLATED],
    fast: FastClass::Never,
    victims: VictimsClass::NodeOnly,
};

/// `node(s) didn't have the requested labels` (preemption cannot resolve it).
pub(crate) static LABELS_PRESENCE_VIOLATED: ReasonDef = ReasonDef {
    text: "node(s) didn't have the requested labels",
    resolvable: false,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(&c.label_args[p.slot], p.presence, n, out))
}

/// `labels` are resolved symbols (None = the string is unknown, so no node has it).
pub(crate) fn check(
    labels: &[Option<Sym>],
    presence: bool,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> bool {
    for l in labels {
        let has = l.is_some_and(|k| n.info.labels.has(k));
        if has != presence {
            out.push(LABELS_PRESENCE_VIOLATED.reason());
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let cases: [(&[&str], bool, bool); 4] = [
            (&["baz"], true, false),
            (&["baz"], false, true),
            (&["foo", "bar"], true, true),
            (&["foo", "baz"], false, false),
        ];
        for (labels, presence, fit) in cases {
            let n =
                node_json(json!({"metadata": {"name": "n1", "labels": {"foo": "x", "bar": "y"}}}));
            let kind = crate::policy::PredicateKind::LabelsPresence {
                labels: labels.iter().map(|s| s.to_string()).collect(),
                presence,
            };
            let got = reasons_of(kind, vec![n], vec![], pod(json!({})));
            let want: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) didn't have the requested labels".into()]
            };
            assert_eq!(got, vec![want], "{labels:?} {presence}");
        }
    }
}

//! EqualPriority: every node scores 1.

use super::unit::PriorityUnit;
use super::Prio;
use crate::ctx::PodCtx;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PriorityUnit = PriorityUnit {
    name: "EqualPriority",
    argument: None,
    hot: None,
};

/// Every node scores 1.
pub(crate) fn uniform(_c: &PodCtx, _p: &Prio) -> Option<i64> {
    Some(1)
}

/// The registry's entry point: 1 per feasible node.
pub(crate) fn score_nodes(
    _c: &PodCtx,
    _p: &Prio,
    _feasible: &[u32],
    _counts: &mut Vec<i64>,
    out: &mut [i64],
) {
    out.fill(1)
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn all_one() {
        let got = scores_of(
            builtin_prio(R::EqualPriority),
            vec![cm("a", "1", "1Gi"), cm("b", "1", "1Gi")],
            vec![],
            pod(json!({})),
        );
        assert_eq!(got, vec![1, 1]);
    }
}

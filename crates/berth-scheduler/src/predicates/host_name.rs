//! HostName: `spec.nodeName` must be empty or equal the node's name.

use super::{NodeView, Reason};
use crate::ctx::PodCtx;

/// Checks `spec.nodeName`.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if c.pod.node_name.is_empty() || c.pod.node_name == n.info.name {
        return true;
    }
    out.push(Reason::PodNotMatchHostName);
    false
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let nodes = vec![
            simple_node("n1", "4", "8Gi", 10),
            simple_node("n2", "4", "8Gi", 10),
        ];
        let p = pod(json!({"spec": {"nodeName": "n2"}}));
        let got = reasons_of(builtin(P::HostName), nodes, vec![], p);
        assert_eq!(
            got,
            vec![
                vec!["node(s) didn't match the requested hostname".to_string()],
                vec![]
            ]
        );
    }
}

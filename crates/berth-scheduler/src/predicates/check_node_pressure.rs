//! Test vectors of the three pressure units: CheckNodeMemoryPressure (BestEffort pods only),
//! CheckNodeDiskPressure, CheckNodePIDPressure.

use crate::testutil::*;
use serde_json::json;

fn n(cond: &str) -> crate::model::Node {
    node_json(
        json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"},
        "conditions": [{"type": cond, "status": "True"}]}}),
    )
}

#[test]
fn vectors() {
    let be = pod(json!({"spec": {"containers": [{"name": "c"}]}}));
    let burst = pod(
        json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}),
    );
    let guar = pod(
        json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
    );
    let mp = builtin(P::CheckNodeMemoryPressure);
    assert_eq!(
        reasons_of(mp.clone(), vec![n("MemoryPressure")], vec![], be),
        vec![vec!["node(s) had memory pressure".to_string()]]
    );
    assert_eq!(
        reasons_of(mp, vec![n("MemoryPressure")], vec![], burst),
        vec![Vec::<String>::new()]
    );
    assert_eq!(
        reasons_of(
            builtin(P::CheckNodeDiskPressure),
            vec![n("DiskPressure")],
            vec![],
            guar.clone()
        ),
        vec![vec!["node(s) had disk pressure".to_string()]]
    );
    assert_eq!(
        reasons_of(
            builtin(P::CheckNodePIDPressure),
            vec![n("PIDPressure")],
            vec![],
            guar
        ),
        vec![vec!["node(s) had pid pressure".to_string()]]
    );
}

//! NoDiskConflict: GCE PD, AWS EBS, RBD and iSCSI volumes already mounted on the node.

use super::unit::{FastClass, PredicateUnit, ReasonDef, VictimsClass};
use super::Pred;
use super::{NodeView, Reason};
use crate::ctx::PodCtx;
use crate::pod_info::CVolume;

/// The unit (see `registry.rs`).
pub(crate) const UNIT: PredicateUnit = PredicateUnit {
    name: "NoDiskConflict",
    aliases: &[],
    order: 7,
    argument: None,
    reasons: &[&DISK_CONFLICT],
    fast: FastClass::Volumes,
    victims: VictimsClass::MetWithoutPortsAndVolumes,
};

/// `node(s) had no available disk`.
pub(crate) static DISK_CONFLICT: ReasonDef = ReasonDef {
    text: "node(s) had no available disk",
    resolvable: true,
};

/// The registry's entry point.
#[inline]
pub(crate) fn filter(
    c: &PodCtx,
    _p: &Pred,
    n: &NodeView,
    out: &mut Vec<Reason>,
) -> Result<bool, String> {
    Ok(check(c, n, out))
}

fn conflict(a: &CVolume, b: &CVolume) -> bool {
    use CVolume::*;
    match (a, b) {
        (Gce { pd: x, ro: rx }, Gce { pd: y, ro: ry }) => x == y && !(*rx && *ry),
        (Ebs { id: x, .. }, Ebs { id: y, .. }) => x == y,
        (
            Rbd {
                mons: m1,
                pool: p1,
                image: i1,
                ro: r1,
            },
            Rbd {
                mons: m2,
                pool: p2,
                image: i2,
                ro: r2,
            },
        ) => m1.iter().any(|m| m2.contains(m)) && p1 == p2 && i1 == i2 && !(*r1 && *r2),
        (Iscsi { iqn: x, ro: rx }, Iscsi { iqn: y, ro: ry }) => x == y && !(*rx && *ry),
        _ => false,
    }
}

/// Fails if any of the pod's volumes conflicts with one in use on the node.
pub(crate) fn check(c: &PodCtx, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if c.pod.volumes.is_empty() || n.info.disks.is_empty() {
        return true;
    }
    if c.pod
        .volumes
        .iter()
        .any(|v| n.info.disks.iter().any(|e| conflict(v, e)))
    {
        out.push(DISK_CONFLICT.reason());
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    #[test]
    fn vectors() {
        let gce =
            |ro: bool| json!({"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": ro}});
        let ebs =
            json!({"name": "v", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": true}});
        let rbd = |m: serde_json::Value| json!({"name": "v", "rbd": {"monitors": m, "pool": "p", "image": "i"}});
        let cases = vec![
            (gce(false), gce(false), false),
            (gce(true), gce(true), true),
            (ebs.clone(), ebs, false),
            (rbd(json!(["a", "b"])), rbd(json!(["b", "c"])), false),
            (rbd(json!(["a"])), rbd(json!(["c"])), true),
        ];
        for (existing, new, fit) in cases {
            let e = pod(
                json!({"metadata": {"name": "e"}, "spec": {"nodeName": "n1", "volumes": [existing]}}),
            );
            let p = pod(json!({"spec": {"volumes": [new]}}));
            let got = reasons_of(
                builtin(P::NoDiskConflict),
                vec![simple_node("n1", "1", "1Gi", 10)],
                vec![e],
                p,
            );
            let w: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) had no available disk".into()]
            };
            assert_eq!(got, vec![w]);
        }
    }
}

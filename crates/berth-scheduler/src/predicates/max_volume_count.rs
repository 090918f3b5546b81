//! The check MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount and
//! MaxCSIVolumeCountPred share (each unit in its own file), with their test vectors.

use super::unit::ReasonDef;
use super::{NodeView, Reason};
use crate::ctx::PodCtx;
use crate::intern::Sym;
use crate::node_info::{AttachKind, NodeInfo};

/// `node(s) exceed max volume count`.
pub(crate) static LIMIT_EXCEEDED: ReasonDef = ReasonDef {
    text: "node(s) exceed max volume count",
    resolvable: true,
};

fn relevant(kind: AttachKind, k: AttachKind) -> bool {
    k == kind || (k == AttachKind::Any && kind != AttachKind::Csi)
}

fn limit(c: &PodCtx, kind: AttachKind, driver: Sym, n: &NodeInfo) -> Option<i64> {
    let res = match kind {
        AttachKind::Ebs => c.i.get("attachable-volumes-aws-ebs"),
        AttachKind::Gce => c.i.get("attachable-volumes-gce-pd"),
        AttachKind::Azure => c.i.get("attachable-volumes-azure-disk"),
        AttachKind::Csi => c.csi_limit_key(driver),
        AttachKind::Any => None,
    };
    if let Some(r) = res {
        if let Some((_, v)) = n.alloc.scalars.iter().find(|(name, _)| *name == r) {
            return Some(*v);
        }
    }
    if kind == AttachKind::Csi {
        return None;
    }
    if let Some(v) = c.max_pd_vols {
        return Some(v);
    }
    Some(match kind {
        AttachKind::Ebs => {
            let t = n.instance_type.as_bytes();
            if t.len() >= 2 && (t[0] == b'c' || t[0] == b'm') && t[1] == b'5' {
                25
            } else {
                39
            }
        }
        _ => 16,
    })
}

/// Fails if attaching the pod's new volumes of this kind would exceed the node's limit.
pub(crate) fn check(c: &PodCtx, kind: AttachKind, n: &NodeView, out: &mut Vec<Reason>) -> bool {
    if c.attach.is_empty() {
        return true;
    }
    let drivers: &[Sym] = if kind == AttachKind::Csi {
        &c.csi_drivers
    } else {
        &[0]
    };
    for &driver in drivers {
        let same =
            |k: AttachKind, d: Sym| relevant(kind, k) && (kind != AttachKind::Csi || d == driver);
        let attached = &n.info.attached;
        let mut new = 0i64;
        for (ix, &(k, d, id)) in c.attach.iter().enumerate() {
            if !same(k, d)
                || c.attach[..ix]
                    .iter()
                    .any(|&(k2, d2, id2)| same(k2, d2) && id2 == id)
            {
                continue;
            }
            if !attached
                .iter()
                .any(|a| same(a.kind, a.driver) && a.id == id)
            {
                new += 1;
            }
        }
        if new == 0 {
            continue;
        }
        let Some(limit) = limit(c, kind, driver, n.info) else {
            continue;
        };
        let existing = attached.iter().filter(|a| same(a.kind, a.driver)).count() as i64;
        if existing + new > limit {
            out.push(LIMIT_EXCEEDED.reason());
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::testutil::*;
    use serde_json::json;

    fn ebs(id: &str) -> serde_json::Value {
        json!({"name": id, "awsElasticBlockStore": {"volumeID": id}})
    }

    #[test]
    fn vectors() {
        let pvc = |c: &str| json!({"name": c, "persistentVolumeClaim": {"claimName": c}});
        let cases = vec![
            (4, vec![ebs("a"), ebs("b")], vec![ebs("c")], true),
            (2, vec![ebs("a"), ebs("b")], vec![ebs("c")], false),
            (2, vec![ebs("a"), ebs("b")], vec![ebs("a")], true),
            (2, vec![ebs("a")], vec![pvc("x"), pvc("y")], false),
        ];
        for (limit, existing, new, fit) in cases {
            let n = node_json(
                json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10", "attachable-volumes-aws-ebs": limit.to_string()}}}),
            );
            let e = pod(
                json!({"metadata": {"name": "e"}, "spec": {"nodeName": "n1", "volumes": existing}}),
            );
            let p = pod(json!({"spec": {"volumes": new}}));
            let got = reasons_of(builtin(P::MaxEBSVolumeCount), vec![n], vec![e], p);
            let w: Vec<String> = if fit {
                vec![]
            } else {
                vec!["node(s) exceed max volume count".into()]
            };
            assert_eq!(got, vec![w], "limit {limit}");
        }
    }
}

//! The score plugins of a KubeSchedulerConfiguration profile on 1.35's 0..100 scale, each run
//! through a compiled profile whose only score plugin it is, against vectors from upstream's
//! own plugin tests (`pkg/scheduler/framework/plugins/<plugin>/*_test.go`; the case names are
//! upstream's). Quantities are upstream's: `"4000"` cpu is 4000 cores.

use crate::testutil::*;
use serde_json::{json, Value};

fn with_requests(name: &str, node: &str, containers: &[(&str, &str)]) -> crate::model::Pod {
    let cs: Vec<Value> = containers
        .iter()
        .enumerate()
        .map(|(k, (cpu, mem))| {
            json!({"name": format!("c{k}"), "resources": {"requests": {"cpu": cpu, "memory": mem}}})
        })
        .collect();
    let mut spec = json!({ "containers": cs });
    if !node.is_empty() {
        spec["nodeName"] = json!(node);
    }
    pod(json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}))
}

/// upstream's `st.MakePod().Obj()`: no containers at all (no non-zero defaults either).
fn empty(name: &str, node: &str) -> crate::model::Pod {
    with_requests(name, node, &[])
}

/// The two containers of upstream's `cpuAndMemory`: 1000m/2000 and 2000m/3000.
const CPU_AND_MEMORY: &[(&str, &str)] = &[("1000m", "2000"), ("2000m", "3000")];
/// upstream's `cpuOnly`: 1000m/0 and 2000m/0.
const CPU_ONLY: &[(&str, &str)] = &[("1000m", "0"), ("2000m", "0")];

fn fit(
    nodes: Vec<crate::model::Node>,
    pods: Vec<crate::model::Pod>,
    p: crate::model::Pod,
) -> Vec<i64> {
    plugin_scores_of("NodeResourcesFit", "", nodes, pods, p)
}

/// `TestLeastAllocatedScoringStrategy` (least_allocated_test.go).
#[test]
fn node_resources_fit_least_allocated() {
    // "nothing scheduled, nothing requested"
    assert_eq!(
        fit(
            vec![cm("node1", "4000", "10000"), cm("node2", "4000", "10000")],
            vec![],
            empty("p", "")
        ),
        [100, 100]
    );
    // "nothing scheduled, resources requested, differently sized nodes": (25 + 50) / 2, 50
    let two = || with_requests("p", "", &[("1000", "2000"), ("2000", "3000")]);
    assert_eq!(
        fit(
            vec![cm("node1", "4000", "10000"), cm("node2", "6000", "10000")],
            vec![],
            two()
        ),
        [37, 50]
    );
    // "no resources requested, pods scheduled with resources": (40 + 100) / 2, (40 + 75) / 2
    let pods = vec![
        with_requests("a", "node1", &[("3000", "0")]),
        with_requests("b", "node1", &[("3000", "0")]),
        with_requests("c", "node2", &[("3000", "0")]),
        with_requests("d", "node2", &[("3000", "5000")]),
    ];
    assert_eq!(
        fit(
            vec![cm("node1", "10000", "20000"), cm("node2", "10000", "20000")],
            pods,
            empty("p", "")
        ),
        [70, 57]
    );
    // "resources requested, pods scheduled with resources, differently sized nodes"
    let pods = vec![
        with_requests("a", "node1", &[("3000", "0")]),
        with_requests("b", "node2", &[("3000", "5000")]),
    ];
    assert_eq!(
        fit(
            vec![cm("node1", "10000", "20000"), cm("node2", "10000", "50000")],
            pods,
            two()
        ),
        [57, 60]
    );
    // "requested resources exceed node capacity": cpu 0, memory 100 and 50
    let pods = vec![
        with_requests("a", "node1", &[("3000", "0")]),
        with_requests("b", "node2", &[("3000", "5000")]),
    ];
    assert_eq!(
        fit(
            vec![cm("node1", "4000", "10000"), cm("node2", "4000", "10000")],
            pods,
            with_requests("p", "", &[("3000", "0")])
        ),
        [50, 25]
    );
    // "zero node resources, pods scheduled with resources"
    let bare = |n: &str| {
        node_json(json!({"metadata": {"name": n}, "status": {"allocatable": {"pods": "110"}}}))
    };
    assert_eq!(
        fit(vec![bare("node1"), bare("node2")], vec![], empty("p", "")),
        [0, 0]
    );
}

/// The example: upstream tells 1300m and 1500m requested on 4000m apart (67 and 62
/// on cpu), where 1.11's 0..10 times ten gives both 60.
#[test]
fn least_allocated_tells_apart_nodes_within_a_decile() {
    let nodes = vec![
        cm("node1", "4000m", "1000Gi"),
        cm("node2", "4000m", "1000Gi"),
    ];
    let pods = vec![
        with_requests("a", "node1", &[("1300m", "0")]),
        with_requests("b", "node2", &[("1500m", "0")]),
    ];
    let p = with_requests("p", "", &[("0", "0")]);
    // cpu 67 and 62, memory 100 on both: (67 + 100) / 2, (62 + 100) / 2
    assert_eq!(fit(nodes.clone(), pods.clone(), p.clone()), [83, 81]);
    // 1.11: cpu 6 on both, memory 10: (6 + 10) / 2
    assert_eq!(
        scores_of(builtin_prio(R::LeastRequestedPriority), nodes, pods, p),
        [8, 8],
        "the seed's 0..10 ties them"
    );
}

/// `TestMostAllocatedScoringStrategy` (most_allocated_test.go).
#[test]
fn node_resources_fit_most_allocated() {
    let most = "  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n";
    let score = |nodes, pods, p| plugin_scores_of("NodeResourcesFit", most, nodes, pods, p);
    // "nothing scheduled, resources requested, differently sized nodes": (75 + 50) / 2, 50
    assert_eq!(
        score(
            vec![cm("node1", "4000", "10000"), cm("node2", "6000", "10000")],
            vec![],
            with_requests("p", "", &[("1000", "2000"), ("2000", "3000")])
        ),
        [62, 50]
    );
    // "no resources requested, pods scheduled with resources": (60 + 0) / 2, (60 + 25) / 2
    let pods = vec![
        with_requests("a", "node1", &[("3000", "0")]),
        with_requests("b", "node1", &[("3000", "0")]),
        with_requests("c", "node2", &[("3000", "0")]),
        with_requests("d", "node2", &[("3000", "5000")]),
    ];
    assert_eq!(
        score(
            vec![cm("node1", "10000", "20000"), cm("node2", "10000", "20000")],
            pods,
            empty("p", "")
        ),
        [30, 42]
    );
    // a request above allocatable is capped there (1.11 scored that resource 0): (100 + 50) / 2
    assert_eq!(
        score(
            vec![cm("node1", "4000", "10000")],
            vec![],
            with_requests("p", "", &[("5000", "5000")])
        ),
        [75]
    );
}

/// `TestNodeResourcesBalancedAllocation` (balanced_allocation_test.go), 1.35's standard
/// deviation over actual requests.
#[test]
fn node_resources_balanced_allocation() {
    let score =
        |nodes, pods, p| plugin_scores_of("NodeResourcesBalancedAllocation", "", nodes, pods, p);
    // "nothing scheduled, resources requested, differently sized nodes": std 0.125 and 0
    assert_eq!(
        score(
            vec![cm("node1", "4000m", "10000"), cm("node2", "6000m", "10000")],
            vec![],
            with_requests("p", "", CPU_AND_MEMORY)
        ),
        [87, 100]
    );
    let placed = || {
        vec![
            with_requests("a", "node1", CPU_ONLY),
            with_requests("b", "node2", CPU_AND_MEMORY),
        ]
    };
    // "resources requested, pods scheduled with resources": std 0.175 and 0.05
    assert_eq!(
        score(
            vec![
                cm("node1", "10000m", "20000"),
                cm("node2", "10000m", "20000")
            ],
            placed(),
            with_requests("p", "", CPU_AND_MEMORY)
        ),
        [82, 95]
    );
    // "resources requested, pods scheduled with resources, differently sized nodes"
    assert_eq!(
        score(
            vec![
                cm("node1", "10000m", "20000"),
                cm("node2", "10000m", "50000")
            ],
            placed(),
            with_requests("p", "", CPU_AND_MEMORY)
        ),
        [82, 80]
    );
    // "requested resources at node capacity": std 0.5 and 0.25 (1.11 scored both 0)
    assert_eq!(
        score(
            vec![cm("node1", "6000m", "10000"), cm("node2", "6000m", "10000")],
            placed(),
            with_requests("p", "", CPU_ONLY)
        ),
        [50, 75]
    );
    // "nothing scheduled, nothing requested, skip in PreScore": a best-effort pod scores 0
    assert_eq!(
        score(
            vec![cm("node1", "4000m", "10000"), cm("node2", "4000m", "10000")],
            vec![],
            empty("p", "")
        ),
        [0, 0]
    );
}

/// `TestNodeAffinityPriority` (node_affinity_test.go).
#[test]
fn node_affinity() {
    let t = |w: i32, exprs: Value| json!({"weight": w, "preference": {"matchExpressions": exprs}});
    let e = |k: &str, v: &str| json!({"key": k, "operator": "In", "values": [v]});
    let p = pod(
        json!({"metadata": {"name": "p"}, "spec": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            t(2, json!([e("foo", "bar")])), t(4, json!([e("key", "value")])),
            t(5, json!([e("foo", "bar"), e("key", "value"), e("az", "az1")]))]}}}}),
    );
    let nodes = vec![
        node_json(json!({"metadata": {"name": "node1", "labels": {"foo": "bar"}}})),
        node_json(json!({"metadata": {"name": "node2", "labels": {"key": "value"}}})),
        node_json(
            json!({"metadata": {"name": "node5", "labels": {"foo": "bar", "key": "value", "az": "az1"}}}),
        ),
    ];
    // "all nodes matches the preferred scheduling requirements of pod but with different
    // priorities": 2, 4, 11 normalized by 11
    assert_eq!(
        plugin_scores_of("NodeAffinity", "", nodes.clone(), vec![], p),
        [18, 36, 100]
    );
    // "all nodes are same priority as NodeAffinity is nil"
    assert_eq!(
        plugin_scores_of("NodeAffinity", "", nodes, vec![], empty("p", "")),
        [0, 0, 0]
    );
}

/// `TestTaintTolerationScore` (taint_toleration_test.go).
#[test]
fn taint_toleration() {
    let n = |name: &str, taints: Value| {
        node_json(json!({"metadata": {"name": name}, "spec": {"taints": taints}}))
    };
    let prefer = |k: &str, v: &str| json!({"key": k, "value": v, "effect": "PreferNoSchedule"});
    // "node with taints tolerated by the pod, gets a higher score than those node with
    // intolerable taints"
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {"tolerations": [
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]}}));
    assert_eq!(
        plugin_scores_of(
            "TaintToleration",
            "",
            vec![
                n("nodeA", json!([prefer("foo", "bar")])),
                n("nodeB", json!([prefer("foo", "blah")]))
            ],
            vec![],
            p.clone()
        ),
        [100, 0]
    );
    // "the more intolerable taints a node has, the lower score it gets."
    assert_eq!(
        plugin_scores_of(
            "TaintToleration",
            "",
            vec![
                n("nodeA", json!([])),
                n("nodeB", json!([prefer("cpu-type", "arm64")])),
                n(
                    "nodeC",
                    json!([prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")])
                ),
            ],
            vec![],
            p
        ),
        [100, 50, 0]
    );
}

/// InterPodAffinity's NormalizeScore: 1.35 spans the feasible nodes' lowest and highest sums
/// (kubernetes#98096); 1.11 started the range at 0.
#[test]
fn inter_pod_affinity() {
    let n = |name: &str, zone: &str| {
        node_json(json!({"metadata": {"name": name, "labels": {"zone": zone}}}))
    };
    let on = |name: &str, node: &str| {
        pod(
            json!({"metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
                   "spec": {"nodeName": node, "containers": [{"name": "c"}]}}),
        )
    };
    let p = pod(
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}}]}}}}),
    );
    let nodes = || vec![n("n1", "z1"), n("n2", "z2"), n("n3", "z3")];
    // sums 5, 10, 0
    let pods = vec![on("a", "n1"), on("b", "n2"), on("c", "n2")];
    assert_eq!(
        plugin_scores_of("InterPodAffinity", "", nodes(), pods, p.clone()),
        [50, 100, 0]
    );
    // sums 5, 10, 5: the lowest scores 0 (1.11 would give 5, 10, 5)
    let pods = vec![on("a", "n1"), on("b", "n2"), on("c", "n2"), on("d", "n3")];
    assert_eq!(
        plugin_scores_of("InterPodAffinity", "", nodes(), pods.clone(), p.clone()),
        [0, 100, 0]
    );
    assert_eq!(
        scores_of(builtin_prio(R::InterPodAffinityPriority), nodes(), pods, p),
        [5, 10, 5]
    );
}

/// `TestImageLocalityPriority` (image_locality_test.go, 1.35: thresholds per container, sizes
/// scaled by the share of nodes having the image).
#[test]
fn image_locality() {
    let mb = 1024 * 1024i64;
    let node1 = node_json(json!({"metadata": {"name": "node1"}, "status": {"images": [
        {"names": ["gcr.io/40:latest", "gcr.io/40:v1"], "sizeBytes": 40 * mb},
        {"names": ["gcr.io/300:latest", "gcr.io/300:v1"], "sizeBytes": 300 * mb},
        {"names": ["gcr.io/2000:latest"], "sizeBytes": 2000 * mb}]}}));
    let node2 = node_json(json!({"metadata": {"name": "node2"}, "status": {"images": [
        {"names": ["gcr.io/250:latest"], "sizeBytes": 250 * mb},
        {"names": ["gcr.io/10:latest", "gcr.io/10:v1"], "sizeBytes": 10 * mb}]}}));
    let p = |a: &str, b: &str| {
        pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": a}, {"name": "b", "image": b}]}}))
    };
    let score = |pod| {
        plugin_scores_of(
            "ImageLocality",
            "",
            vec![node1.clone(), node2.clone()],
            vec![],
            pod,
        )
    };
    // "two images spread on two nodes, prefer the larger image one": 100 * (250M/2 - 23M) / (2 * 1000M - 23M)
    assert_eq!(score(p("gcr.io/40", "gcr.io/250")), [0, 5]);
    // "two images on one node, prefer this node": 100 * ((40M + 300M)/2 - 23M) / (2 * 1000M - 23M)
    assert_eq!(score(p("gcr.io/40", "gcr.io/300")), [7, 0]);
    // an explicit tag matches as written; 100 * (2000M/2 - 23M) / (2 * 1000M - 23M)
    assert_eq!(score(p("gcr.io/2000:latest", "gcr.io/10:v1")), [49, 0]);
}

/// `TestPodTopologySpreadScore` (podtopologyspread/scoring_test.go).
#[test]
fn pod_topology_spread() {
    let node = |name: &str, zone: &str| {
        node_json(json!({"metadata": {"name": name, "labels": {"node": name, "zone": zone}}}))
    };
    let placed = |name: &str, on: &str| {
        pod(
            json!({"metadata": {"name": name, "namespace": "default", "labels": {"foo": ""}},
                   "spec": {"nodeName": on, "containers": [{"name": "c"}]}}),
        )
    };
    let incoming = |key: &str| {
        pod(
            json!({"metadata": {"name": "p", "namespace": "default", "labels": {"foo": ""}},
            "spec": {"containers": [{"name": "c"}], "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
                 "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]}}),
        )
    };
    let nodes = vec![
        node("node-a", "z1"),
        node("node-b", "z1"),
        node("node-c", "z2"),
        node("node-d", "z2"),
    ];
    // "one constraint on node, all 4 nodes are candidates": 2/1/0/3 pods, raw 4, 2, 0, 5
    let pods = vec![
        placed("a1", "node-a"),
        placed("a2", "node-a"),
        placed("b1", "node-b"),
        placed("d1", "node-d"),
        placed("d2", "node-d"),
        placed("d3", "node-d"),
    ];
    assert_eq!(
        plugin_scores_of(
            "PodTopologySpread",
            "",
            nodes.clone(),
            pods,
            incoming("node")
        ),
        [20, 60, 100, 0]
    );
    // one constraint on zone, zones 3/1: raw 4 and 1, 100 * (4 + 1 - s) / 4
    let pods = vec![
        placed("a1", "node-a"),
        placed("a2", "node-a"),
        placed("b1", "node-b"),
        placed("c1", "node-c"),
    ];
    assert_eq!(
        plugin_scores_of("PodTopologySpread", "", nodes, pods, incoming("zone")),
        [25, 25, 100, 100]
    );
}

/// A profile scores LeastAllocated and BalancedAllocation as upstream's formulas, written out
/// here independently of the engine, on random clusters: per node (explain) and for the chosen
/// node (the reuse-across-pods path the scheduler takes).
#[test]
fn least_and_balanced_allocation_agree_with_upstreams_formulas_on_random_nodes() {
    use rand::{Rng, SeedableRng};
    const MI: i64 = 1024 * 1024;
    // (cpu milli, memory bytes) of one container's requests; None = not requested
    type Req = (Option<i64>, Option<i64>);
    let nonzero = |r: &Req| (r.0.unwrap_or(100), r.1.unwrap_or(200 * MI));
    let actual = |r: &Req| (r.0.unwrap_or(0), r.1.unwrap_or(0));
    let least = |req: i64, alloc: i64| {
        (alloc != 0).then(|| {
            if req > alloc {
                0
            } else {
                (alloc - req) * 100 / alloc
            }
        })
    };
    let fraction =
        |req: i64, alloc: i64| (alloc != 0).then(|| (req as f64 / alloc as f64).min(1.0));
    let container = |r: &Req| {
        let mut requests = serde_json::Map::new();
        if let Some(c) = r.0 {
            requests.insert("cpu".into(), json!(format!("{c}m")));
        }
        if let Some(m) = r.1 {
            requests.insert("memory".into(), json!(m.to_string()));
        }
        json!({"name": "c", "resources": {"requests": requests}})
    };
    let profile = "  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated}}\n";
    let yaml = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- plugins:\n    filter:\n      disabled: [{{name: '*'}}]\n    score:\n      \
         disabled: [{{name: '*'}}]\n      enabled: [{{name: NodeResourcesFit, weight: 2}}, \
         {{name: NodeResourcesBalancedAllocation, weight: 3}}]\n{profile}"
    );
    let compiled = crate::testutil::compiled_profile(&yaml);
    for seed in 0..300u64 {
        let r = &mut rand::rngs::SmallRng::seed_from_u64(seed);
        let req = |r: &mut rand::rngs::SmallRng| -> Req {
            (
                r.random_bool(0.8).then(|| r.random_range(0..3000)),
                r.random_bool(0.8).then(|| r.random_range(0..4096) * MI),
            )
        };
        let n = r.random_range(2..7);
        let allocs: Vec<(i64, i64)> = (0..n)
            .map(|_| {
                (
                    if r.random_bool(0.1) {
                        0
                    } else {
                        r.random_range(1..8000)
                    },
                    if r.random_bool(0.1) {
                        0
                    } else {
                        r.random_range(1..16384) * MI
                    },
                )
            })
            .collect();
        let placed: Vec<(usize, Req)> = (0..r.random_range(0..12))
            .map(|_| (r.random_range(0..n), req(r)))
            .collect();
        let incoming = req(r);
        let mut cache = crate::ClusterCache::new();
        for (k, (cpu, mem)) in allocs.iter().enumerate() {
            cache.upsert_node(&node_json(json!({"metadata": {"name": format!("n{k}")},
                "status": {"allocatable": {"cpu": format!("{cpu}m"), "memory": mem.to_string(), "pods": "110"}}})));
        }
        for (j, (k, q)) in placed.iter().enumerate() {
            cache.upsert_pod(&pod(json!({"metadata": {"name": format!("e{j}"), "namespace": "default", "uid": format!("e{j}")},
                "spec": {"nodeName": format!("n{k}"), "containers": [container(q)]}})));
        }
        let p = pod(
            json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [container(&incoming)]}}),
        );
        // upstream's scores, per node in name order (n0..n6 sort as written)
        let want: Vec<(i64, i64)> = (0..n)
            .map(|k| {
                let on: Vec<&Req> = placed
                    .iter()
                    .filter(|(at, _)| *at == k)
                    .map(|(_, q)| q)
                    .collect();
                let (alloc_cpu, alloc_mem) = allocs[k];
                let nz = on.iter().fold(nonzero(&incoming), |acc, q| {
                    let v = nonzero(q);
                    (acc.0 + v.0, acc.1 + v.1)
                });
                let scores: Vec<i64> = [least(nz.0, alloc_cpu), least(nz.1, alloc_mem)]
                    .into_iter()
                    .flatten()
                    .collect();
                let la = if scores.is_empty() {
                    0
                } else {
                    scores.iter().sum::<i64>() / scores.len() as i64
                };
                let pod_actual = actual(&incoming);
                let ba = if pod_actual == (0, 0) {
                    0
                } else {
                    let sum = on.iter().fold(pod_actual, |acc, q| {
                        let v = actual(q);
                        (acc.0 + v.0, acc.1 + v.1)
                    });
                    let f: Vec<f64> = [fraction(sum.0, alloc_cpu), fraction(sum.1, alloc_mem)]
                        .into_iter()
                        .flatten()
                        .collect();
                    let std = if f.len() == 2 {
                        ((f[0] - f[1]) / 2.0).abs()
                    } else {
                        0.0
                    };
                    ((1.0 - std) * 100.0) as i64
                };
                (la, ba)
            })
            .collect();
        let info = compiled.plugin_args.compile_pod(&mut cache, &p);
        let build = || {
            crate::Scheduler::builder()
                .policy(compiled.policy.clone())
                .framework_profile(true)
                .plugin_args(compiled.plugin_args.clone())
                .build()
                .unwrap()
        };
        let ex = build().explain(&cache, &info);
        let got: Vec<(i64, i64)> = ex
            .nodes
            .iter()
            .map(|ne| (ne.priorities[0].score, ne.priorities[1].score))
            .collect();
        assert_eq!(got, want, "seed {seed}");
        let best = want.iter().map(|(la, ba)| 2 * la + 3 * ba).max().unwrap();
        match build().schedule(&cache, &info) {
            crate::Decision::Scheduled { score, .. } => assert_eq!(score, best, "seed {seed}"),
            other => panic!("seed {seed}: {other:?}"),
        }
    }
}

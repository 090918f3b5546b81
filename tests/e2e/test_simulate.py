"""`berth simulate`: the whole control plane on virtual time, a workload timeline, report.json.

The timelines here have answers known by hand: two nodes of 2 cpu, a Deployment of 500m pods
(four fit on a node), a node failure (its pods evicted after the 40s grace period and the 300s
toleration, their replacements Pending).
"""

import json
import subprocess

from conftest import BERTH_BIN, REPO, to_yaml

EXAMPLES = REPO / "examples" / "simulate"
CLUSTER = EXAMPLES / "cluster.yaml"


def web(replicas):
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "web", "image": "example.com/web:1",
                    "resources": {"requests": {"cpu": "500m", "memory": "100Mi"}},
                }]},
            },
        },
    }


#: 2 pods at 0s; 10 at 1h (8 fit: 4 per node, 2 Pending); small-2 fails at 2h.
GROWTH_AND_FAILURE = {"timeline": [
    {"at": "0s", "create": [web(2)]},
    {"at": "1h", "scale": [{"kind": "Deployment", "name": "web", "replicas": 10}]},
    {"at": "2h", "fail": ["small-2"]},
]}


def simulate(tmp_path, *args, workload=None, name="run"):
    """Runs `berth simulate` to completion; returns (report.json as text, stdout)."""
    report = tmp_path / name
    cmd = [str(BERTH_BIN), "simulate", "--cluster", str(CLUSTER), "--quiet",
           "--report", str(report), *map(str, args)]
    if workload is not None:
        path = tmp_path / f"{name}-workload.yaml"
        path.write_text(to_yaml([workload]))
        cmd += ["--workload", str(path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr + out.stdout
    return (report / "report.json").read_text(), out.stdout


def at(report, series, seconds):
    """The value of `series` (pending values) at the sample taken at `seconds`."""
    return series["values"][series["t"].index(float(seconds))]


def test_a_deployment_grows_past_capacity_then_a_node_fails(tmp_path):
    text, summary = simulate(tmp_path, "--until", "3h", "--sample-interval", "10m",
                             workload=GROWTH_AND_FAILURE)
    report = json.loads(text)
    pending = report["pending"]
    # Before the growth nothing waits; after it, the 2 pods that do not fit.
    assert at(report, pending, 30 * 60) == 0
    assert at(report, pending, 70 * 60) == 2
    assert at(report, pending, 110 * 60) == 2
    # small-2 is Unknown after 40s and its pods go after their 300s toleration: their 4
    # replacements wait with the first 2.
    assert at(report, pending, 140 * 60) == 6
    assert report["totals"]["pending_at_end"] == 6

    evictions = report["evictions"]
    assert len(evictions) == 4, evictions
    assert {e["reason"] for e in evictions} == {"TaintManagerEviction"}
    for e in evictions:
        assert 2 * 3600 + 40 < e["t"] < 2 * 3600 + 400, e
        assert report["placements"][e["pod"]] == "small-2"

    # Placements: 2 spread over the nodes at 0s, then 4 per node.
    scheduled = [d for d in report["decisions"] if d["result"] == "Scheduled"]
    first = [d["node"] for d in scheduled if d["t"] < 3600]
    assert sorted(first) == ["small-1", "small-2"]
    grown = [d["node"] for d in scheduled if 3600 <= d["t"] < 7200]
    assert sorted(grown) == ["small-1"] * 3 + ["small-2"] * 3
    util = report["utilisation"]
    i = util["t"].index(110 * 60.0)
    assert util["nodes"]["small-1"]["cpu"][i] == 1.0
    assert util["nodes"]["small-2"]["cpu"][i] == 1.0
    assert util["nodes"]["small-1"]["pods"][i] == 4

    # Every failure was for lack of cpu; after the failure, small-2 is also not ready.
    reasons = report["unschedulable_reasons"]
    assert reasons.get("Insufficient cpu", 0) >= 2
    assert set(reasons) <= {"Insufficient cpu", "node(s) were not ready"}, reasons
    actions = [a["what"] for a in report["actions"]]
    assert actions == ["create Deployment default/web", "scale Deployment default/web to 10",
                       "fail node small-2 (stopped)"]
    # 2 at 0s and 6 of the 8 new ones at 1h; the replacements find no room.
    assert "Pods scheduled: 8 " in summary, summary
    assert "Pending at the end: 6" in summary


def deployment(name, replicas, cpu, node=None):
    """A Deployment of `replicas` pods asking for `cpu`, pinned to `node` if given."""
    spec = {"containers": [{"name": name, "image": "example.com/app:1",
                            "resources": {"requests": {"cpu": cpu, "memory": "10Mi"}}}]}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }


#: small-2 holds `big` (1500m); the `web` pods (250m) go to small-1 at least in part, then
#: `stuck` (1500m, only small-1) fills it. At 10m small-1 is tainted NoSchedule: the
#: descheduler picks the pods on it; `web`'s fit on small-2, `stuck` fits nowhere.
TAINTED = {"timeline": [
    {"at": "0s", "create": [deployment("big", 1, "1500m", node="small-2")]},
    {"at": "1m", "create": [deployment("web", 2, "250m")]},
    {"at": "2m", "create": [deployment("stuck", 1, "1500m", node="small-1")]},
    {"at": "10m", "taint": [{"node": "small-1", "key": "dedicated", "value": "x",
                             "effect": "NoSchedule"}]},
]}

DESCHEDULER_POLICY = """apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  RemovePodsViolatingNodeTaints:
    enabled: true
"""


def test_the_descheduler_preview_says_where_each_pod_goes(tmp_path):
    policy = tmp_path / "descheduler.yaml"
    policy.write_text(DESCHEDULER_POLICY)
    text, summary = simulate(tmp_path, "--until", "30m", "--descheduler-policy", policy,
                             workload=TAINTED)
    report = json.loads(text)
    moves = report["descheduler_moves"]
    web = [m for m in moves if m["pod"].startswith("default/web-")]
    stuck = [m for m in moves if m["pod"].startswith("default/stuck-")]
    # Each web pod on small-1 goes to small-2, once: its replacement is not on small-1.
    assert web and len(web) == len({m["pod"] for m in web}), moves
    assert all(m["from"] == "small-1" and m["to"] == "small-2" for m in web), web
    assert all(m["strategy"] == "RemovePodsViolatingNodeTaints" for m in moves)
    # stuck fits nowhere at every run after the taint and is never evicted.
    assert stuck and all(m["to"] is None and m["from"] == "small-1" for m in stuck), stuck
    assert "Insufficient cpu" in stuck[0]["message"] or "node(s)" in stuck[0]["message"]
    evicted = [e["pod"] for e in report["evictions"] if e["reason"] == "Descheduled"]
    assert sorted(evicted) == sorted(m["pod"] for m in web), report["evictions"]
    assert report["placements"][stuck[0]["pod"]] == "small-1"
    assert "fits nowhere: not evicted" in summary, summary
    assert "-> node small-2" in summary, summary
    page = (tmp_path / "run" / "index.html").read_text()
    assert "Descheduler preview" in page


def bare_pod(name, cpu):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "example.com/app:1",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def test_explain_shows_each_nodes_filter_result_and_scores(tmp_path):
    workload = {"timeline": [{"at": "0s", "create": [bare_pod("solo", "500m"),
                                                     bare_pod("huge", "3")]}]}
    text, _ = simulate(tmp_path, "--until", "10m", "--explain", "default/solo",
                       "--explain", "default/huge", workload=workload)
    report = json.loads(text)
    by_pod = {}
    for e in report["explanations"]:
        by_pod.setdefault(e["pod"], []).append(e)
    solo = by_pod["default/solo"][0]
    assert sorted(n["node"] for n in solo["nodes"]) == ["small-1", "small-2"]
    for n in solo["nodes"]:
        assert n["result"] == "Fit", n
        assert n["total"] is not None and n["priorities"], n
    huge = by_pod["default/huge"][0]
    for n in huge["nodes"]:
        assert "Insufficient cpu" in n["result"]["Unschedulable"]["reasons"], n
        assert n["total"] is None
    page = (tmp_path / "run" / "index.html").read_text()
    assert "default/solo at" in page and "node by node" in page


def test_the_same_seed_gives_the_same_report_byte_for_byte(tmp_path):
    args = ("--until", "3h", "--sample-interval", "10m", "--seed", "7")
    a, _ = simulate(tmp_path, *args, workload=GROWTH_AND_FAILURE, name="a")
    b, _ = simulate(tmp_path, *args, workload=GROWTH_AND_FAILURE, name="b")
    assert a == b


def test_compare_least_and_most_allocated_shows_the_packing(tmp_path):
    workload = {"timeline": [{"at": "0s", "create": [web(4)]}]}
    text, summary = simulate(
        tmp_path, "--until", "30m", "--compare",
        EXAMPLES / "least-allocated.yaml", EXAMPLES / "most-allocated.yaml",
        workload=workload,
    )
    report = json.loads(text)
    diff = report["differences"]
    assert diff["schedulers"] == ["least-allocated.yaml", "most-allocated.yaml"]
    # LeastAllocated spreads 2 and 2; MostAllocated packs all 4 on one node.
    assert sorted(p[0] for p in diff["pods_per_node_at_end"].values()) == [2, 2]
    assert sorted(p[1] for p in diff["pods_per_node_at_end"].values()) == [0, 4]
    assert diff["nodes_used_at_end"] == [2, 1]
    assert len(report["compare"]) == 2
    assert "nodes used at the end" in summary
    assert "least-allocated.yaml" in summary and "most-allocated.yaml" in summary


def test_capacity_counts_seed_004s_node_by_hand(tmp_path):
    # Seed 004: 32Gi - 2Gi kube-reserved - 1Gi system-reserved - 100Mi eviction = 29596Mi;
    # a pod of 1Gi fits 28 times (29596 / 1024 = 28.9), cpu (7500m / 100m = 75) is not the limit.
    cluster = tmp_path / "seed-004.yaml"
    cluster.write_text(to_yaml([{"pools": [{
        "name": "seed", "count": 1,
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "kubeletArguments": {
            "kube-reserved": ["cpu=500m,memory=2Gi"],
            "system-reserved": ["memory=1Gi"],
            "eviction-hard": ["memory.available<100Mi"],
        },
    }]}]))
    pod = tmp_path / "pod.yaml"
    pod.write_text(to_yaml([{
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "small-pod"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
                                 "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}]},
    }]))
    out = subprocess.run([str(BERTH_BIN), "simulate", "capacity", "--cluster", str(cluster),
                          "--pod", str(pod)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "The cluster can schedule 28 instance(s) of the pod small-pod.\n\n"
        "Termination reason: Unschedulable: 0/1 nodes are available: 1 Insufficient memory.\n"
    )
    limited = subprocess.run([str(BERTH_BIN), "simulate", "capacity", "--cluster", str(cluster),
                              "--pod", str(pod), "--max", "3"],
                             capture_output=True, text=True, timeout=60)
    assert "can schedule 3 instance(s)" in limited.stdout
    assert "Termination reason: LimitReached: Limit reached" in limited.stdout


def test_a_bad_timeline_is_refused_before_anything_runs(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("timeline:\n- at: 1h\n  scale: [{kind: Deployment, name: web, replicas: lots}]\n")
    out = subprocess.run([str(BERTH_BIN), "simulate", "--cluster", str(CLUSTER),
                          "--workload", str(path), "--quiet"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "timeline[0].scale[0].replicas: expected a whole number" in out.stderr


def test_capacity_of_a_live_cluster_counts_what_is_already_bound(berth_factory, tmp_path):
    # Two quick nodes of 4 cpu: 8 pods of 1 cpu fit on the empty cluster; a bound 2-cpu pod
    # leaves 6. The cluster is only read.
    berth = berth_factory(nodes=2)
    berth.kubectl("wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")
    pod = tmp_path / "one-cpu.yaml"
    pod.write_text(to_yaml([{
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "one-cpu"},
        "spec": {"containers": [{"name": "c", "image": "nginx",
                                 "resources": {"requests": {"cpu": "1", "memory": "10Mi"}}}]},
    }]))

    def capacity():
        out = subprocess.run([str(BERTH_BIN), "simulate", "capacity", "--from-kubeconfig",
                              str(berth.kubeconfig), "--pod", str(pod)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    assert "can schedule 8 instance(s) of the pod one-cpu." in capacity()
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([{
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{
            "name": "c", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]},
    }]))
    assert "can schedule 6 instance(s) of the pod one-cpu." in capacity()
    pods = berth.kubectl_json("get", "pods", "-A")["items"]
    assert [p["metadata"]["name"] for p in pods] == ["big"]


def test_a_simulation_starts_from_a_live_clusters_state(berth_factory, tmp_path):
    # The live cluster: two quick nodes of 4 cpu (node-2 cordoned), a namespace with its own
    # PriorityClass and ServiceAccount, 3 pods of 1 cpu from a Deployment and a bound pod of
    # 2 cpu: 5 of 8 cpu used. The simulation starts from that state, then asks for 4 more
    # pods of 1 cpu: node-2 is cordoned, so only node-1's room counts.
    berth = berth_factory(nodes=2)
    berth.kubectl("wait", "--for=condition=Ready", "node", "--all", "--timeout=60s")
    berth.kubectl("apply", "-f", "-", stdin=to_yaml([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "high"}, "value": 1000},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "builder", "namespace": "shop"}},
        {**deployment("web", 3, "1", node="node-1"), "metadata": {"name": "web", "namespace": "shop"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "shop"},
         "spec": {"nodeName": "node-2", "priorityClassName": "high", "serviceAccountName": "builder",
                  "containers": [{"name": "c", "image": "nginx",
                                  "resources": {"requests": {"cpu": "2"}}}]}},
    ]))
    berth.kubectl("rollout", "status", "-n", "shop", "deployment/web", "--timeout=60s")
    berth.kubectl("cordon", "node-2")
    before = sorted(p["metadata"]["name"] for p in berth.kubectl_json("get", "pods", "-A")["items"])

    more = deployment("more", 4, "1")
    more["metadata"]["namespace"] = "shop"
    workload = tmp_path / "more.yaml"
    workload.write_text(to_yaml([{"timeline": [{"at": "10m", "create": [more]}]}]))
    report_dir = tmp_path / "live"
    out = subprocess.run([str(BERTH_BIN), "simulate", "--from-kubeconfig", str(berth.kubeconfig),
                          "--workload", str(workload), "--until", "1h", "--quiet",
                          "--report", str(report_dir)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr + out.stdout
    report = json.loads((report_dir / "report.json").read_text())
    actions = [a["what"] for a in report["actions"]]
    assert actions[0].startswith(f"import from {berth.kubeconfig}: 2 nodes, "), actions
    created, total = actions[0].split(", ")[1].split(" objects")[0].split(" of ")
    assert created == total, actions
    assert "cordon node node-2" in actions
    assert "create Deployment shop/more" in actions
    # The imported pods stay where they run; of the 4 new ones, node-1's 1 free cpu takes 1.
    placements = report["placements"]
    assert sorted(n for p, n in placements.items() if "more" not in p) == \
        ["node-1"] * 3 + ["node-2"], placements
    assert sorted(n for p, n in placements.items() if "more" in p) == ["node-1"], placements
    assert report["totals"]["pending_at_end"] == 3
    # The live cluster was only read.
    after = sorted(p["metadata"]["name"] for p in berth.kubectl_json("get", "pods", "-A")["items"])
    assert after == before
    assert not berth.kubectl_json("get", "deployments", "-n", "shop", "--field-selector",
                                  "metadata.name=more")["items"]


def test_the_html_report_renders_its_plots_in_a_browser(tmp_path):
    # Debian's chromium (scripts/test installs it), headless: the page opens offline, its
    # plots are inline SVG, the screenshot is drawn and the console stays quiet.
    import shutil
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed (apt-get install chromium; scripts/test does)"
    simulate(tmp_path, "--until", "3h", workload=GROWTH_AND_FAILURE)
    page = tmp_path / "run" / "index.html"
    html = page.read_text()
    assert html.count("<svg") >= 4, "heat maps, pending and events plots"
    assert "<script src" not in html and "<link" not in html, "the page fetches nothing"
    shot = tmp_path / "shot.png"
    out = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,1400",
         "--enable-logging=stderr", "--v=0", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 20_000, out.stderr[-2000:]
    console = [line for line in out.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console

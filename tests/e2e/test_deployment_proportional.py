"""Scaling a Deployment mid-rollout spreads the change over its ReplicaSets in proportion, as
upstream's `scale`/`getProportion`. The new template's pods can never be scheduled (a
nodeSelector no node has), so the rollout stalls at a known mix: with `maxSurge: 3` and
`maxUnavailable: 0`, 3 new and 10 old. Nothing asserts on durations.
"""
import json

from conftest import eventually

DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"


def sets(b, ns):
    items = b.kubectl_json("get", "rs", "-n", ns, "-l", "app=prop")["items"]
    return {r["spec"]["template"]["spec"]["containers"][0]["image"]: r for r in items}


def test_scaling_a_paused_rollout_from_10_to_20_grows_both_replica_sets_in_proportion(berth, ns):
    b = berth
    b.kubectl("create", "deployment", "prop", "--image=nginx:1", "--replicas=10", "-n", ns)
    b.kubectl("patch", "deploy", "prop", "-n", ns, "-p", json.dumps(
        {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 0}}}}))
    b.kubectl("rollout", "status", "deploy/prop", "-n", ns, "--timeout=90s")
    b.kubectl("patch", "deploy", "prop", "-n", ns, "-p", json.dumps(
        {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:2"}],
                                        "nodeSelector": {"berth.io/none": "nowhere"}}}}}))
    eventually(lambda: sets(b, ns).get("nginx:2", {}).get("spec", {}).get("replicas") == 3,
               timeout=60, what="the new ReplicaSet at its surge of 3")
    b.kubectl("rollout", "pause", "deploy/prop", "-n", ns)
    s = sets(b, ns)
    assert (s["nginx:2"]["spec"]["replicas"], s["nginx:1"]["spec"]["replicas"]) == (3, 10)

    b.kubectl("scale", "deploy/prop", "--replicas=20", "-n", ns)
    # 13 pods for 10 + 3 become 23 for 20 + 3: old 10 * 23/13 → 18, new the other 5.
    eventually(lambda: (lambda s: (s["nginx:2"]["spec"]["replicas"],
                                   s["nginx:1"]["spec"]["replicas"]) == (5, 18))(sets(b, ns)),
               timeout=60, what="both ReplicaSets grown in proportion")
    for r in sets(b, ns).values():
        a = r["metadata"]["annotations"]
        assert (a[DESIRED], a[MAX]) == ("20", "23"), a
    d = b.kubectl_json("get", "deploy", "prop", "-n", ns)
    assert d["spec"]["paused"] is True

"""StatefulSet `volumeClaimTemplates` and the persistent-volume binder, driven with kubectl: the
user creates PersistentVolumes, the set's claims `www-web-<i>` bind to them and the pods run;
scaling down keeps or deletes the claims as `persistentVolumeClaimRetentionPolicy` says.

Each test uses a storage class name of its own, so the shared server's other volumes and claims
never bind to its volumes. Timeouts only keep a broken server from hanging the suite.
"""
import json

from conftest import eventually


def volume(name, cls, size):
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {"class": cls}},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": cls, "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {"path": f"/data/{name}"}}}


def web(ns, cls, replicas=3, policy=None):
    spec = {"replicas": replicas, "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                                  "volumeMounts": [{"name": "www",
                                                                    "mountPath": "/usr/share/nginx/html"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "www"},
                                      "spec": {"accessModes": ["ReadWriteOnce"],
                                               "storageClassName": cls,
                                               "resources": {"requests": {"storage": "1Gi"}}}}]}
    if policy:
        spec["persistentVolumeClaimRetentionPolicy"] = policy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": ns}, "spec": spec}


def apply(b, obj):
    b.kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def claims(b, ns):
    """`kubectl get pvc` as {name: (status, volume, capacity, access modes, class)}."""
    out = b.kubectl("get", "pvc", "-n", ns, "--no-headers").stdout
    return {cols[0]: tuple(cols[1:6]) for cols in (line.split() for line in out.splitlines())}


def make_volumes(b, ns):
    names = [f"{ns}-pv-{i}" for i in range(3)]
    # One volume too small for the 1Gi claims: it never binds.
    for name, size in zip(names + [f"{ns}-pv-small"], ["1Gi", "2Gi", "5Gi", "500Mi"]):
        apply(b, volume(name, ns, size))
    return names


def test_claims_bind_to_the_users_volumes_and_the_pods_run(berth, ns):
    b = berth
    pvs = make_volumes(b, ns)
    apply(b, web(ns, ns))
    b.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=120s")
    got = eventually(lambda: (lambda c: c if len(c) == 3 and all(v[0] == "Bound" for v in c.values())
                              else None)(claims(b, ns)), timeout=60, what="three Bound claims")
    assert sorted(got) == ["www-web-0", "www-web-1", "www-web-2"]
    assert sorted(v[1] for v in got.values()) == sorted(pvs)
    for status, vol, capacity, modes, cls in got.values():
        assert (modes, cls) == ("RWO", ns)
    pv_rows = b.kubectl("get", "pv", "-l", f"class={ns}", "--no-headers").stdout.splitlines()
    small = next(r.split() for r in pv_rows if r.startswith(f"{ns}-pv-small "))
    assert small[4] == "Available"
    bound = {r.split()[0]: r.split() for r in pv_rows if not r.startswith(f"{ns}-pv-small ")}
    assert all(r[4] == "Bound" and r[5].startswith(f"{ns}/www-web-") for r in bound.values())

    pods = b.kubectl_json("get", "pods", "-n", ns, "-l", "app=web")["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == ["web-0", "web-1", "web-2"]
    for p in pods:
        assert p["status"]["phase"] == "Running"
        vol = next(v for v in p["spec"]["volumes"] if v["name"] == "www")
        assert vol["persistentVolumeClaim"]["claimName"] == f"www-{p['metadata']['name']}"
    pvc = b.kubectl_json("get", "pvc", "www-web-1", "-n", ns)
    assert pvc["metadata"]["labels"] == {"app": "web"}
    assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert not pvc["metadata"].get("ownerReferences")  # Retain/Retain: nobody owns it

    # Retain (the default): scaling down keeps the claims; scaling up reuses them.
    uid = pvc["metadata"]["uid"]
    b.kubectl("scale", "sts/web", "--replicas=1", "-n", ns)
    eventually(lambda: len(b.kubectl_json("get", "pods", "-n", ns, "-l", "app=web")["items"]) == 1,
               timeout=90, what="scale down to 1")
    assert sorted(claims(b, ns)) == ["www-web-0", "www-web-1", "www-web-2"]
    b.kubectl("scale", "sts/web", "--replicas=2", "-n", ns)
    b.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=90s")
    assert b.kubectl_json("get", "pvc", "www-web-1", "-n", ns)["metadata"]["uid"] == uid


def test_when_scaled_delete_removes_the_scaled_down_claims_and_releases_their_volumes(berth, ns):
    b = berth
    make_volumes(b, ns)
    apply(b, web(ns, ns, policy={"whenScaled": "Delete", "whenDeleted": "Retain"}))
    b.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=120s")
    eventually(lambda: sorted(v[0] for v in claims(b, ns).values()) == ["Bound"] * 3,
               timeout=60, what="three Bound claims")
    gone = {c: claims(b, ns)[c][1] for c in ["www-web-1", "www-web-2"]}
    b.kubectl("scale", "sts/web", "--replicas=1", "-n", ns)
    eventually(lambda: sorted(claims(b, ns)) == ["www-web-0"], timeout=90,
               what="the scaled-down pods' claims deleted")
    # Their volumes are Released (reclaim policy Retain keeps them for the administrator).
    for pv in gone.values():
        eventually(lambda pv=pv: b.kubectl_json("get", "pv", pv)["status"]["phase"] == "Released",
                   timeout=60, what=f"{pv} released")


def test_when_deleted_delete_removes_the_claims_with_the_set(berth, ns):
    b = berth
    make_volumes(b, ns)
    apply(b, web(ns, ns, replicas=2, policy={"whenDeleted": "Delete"}))
    b.kubectl("rollout", "status", "sts/web", "-n", ns, "--timeout=120s")
    pvc = b.kubectl_json("get", "pvc", "www-web-0", "-n", ns)
    assert [(o["kind"], o["name"]) for o in pvc["metadata"]["ownerReferences"]] == [("StatefulSet", "web")]
    b.kubectl("delete", "sts", "web", "-n", ns)
    eventually(lambda: not claims(b, ns), timeout=90, what="the claims deleted with the set")

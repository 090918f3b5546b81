"""The kinds people bring in their manifests (issue 37 items 2, 5 and 6): quota and limits, the
autoscaling, networking, certificates and admission registration kinds, protobuf for every
built-in kind (kubectl's typed clients send it), and upstream's defaulting."""

import json

from conftest import eventually, pod


def names_of(berth, resource, ns):
    return [o["metadata"]["name"] for o in berth.kubectl_json("get", resource, "-n", ns)["items"]]


def test_create_quota_refuses_the_fourth_pod_with_upstreams_message(berth, ns):
    out = berth.kubectl("create", "quota", "q", "-n", ns, "--hard=pods=3").stdout
    assert out.strip() == "resourcequota/q created"

    def synced():
        q = berth.kubectl_json("get", "quota", "q", "-n", ns)
        return q.get("status", {}).get("hard") == {"pods": "3"} and q["status"]["used"] == {"pods": "0"}

    eventually(synced, what="the quota controller to fill the status")
    for i in range(3):
        berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod(f"p{i}"))
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("p3"), check=False)
    assert r.returncode != 0
    assert ('pods "p3" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, '
            'limited: pods=3') in r.stderr
    assert names_of(berth, "pods", ns) == ["p0", "p1", "p2"]
    eventually(lambda: berth.kubectl_json("get", "quota", "q", "-n", ns)["status"]["used"]
               == {"pods": "3"}, what="used to count the three pods")
    table = berth.kubectl("get", "quota", "-n", ns).stdout.splitlines()
    assert table[0].split() == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert "pods: 3/3" in table[1]


def test_a_compute_quota_needs_containers_to_name_their_limits(berth, ns):
    berth.kubectl("create", "quota", "compute", "-n", ns, "--hard=limits.cpu=1,requests.cpu=1")
    eventually(lambda: berth.kubectl_json("get", "quota", "compute", "-n", ns)
               .get("status", {}).get("used"), what="the quota status")
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("bare"), check=False)
    assert r.returncode != 0
    assert ('pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: c; '
            'requests.cpu for: c') in r.stderr
    sized = pod("sized")
    sized["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "600m"}}
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=sized)
    sized["metadata"]["name"] = "sized2"
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=sized, check=False)
    assert "exceeded quota: compute, requested: limits.cpu=600m,requests.cpu=600m, " \
           "used: limits.cpu=600m,requests.cpu=600m, limited: limits.cpu=1,requests.cpu=1" in r.stderr


def test_limit_range_defaults_requests_and_limits_and_enforces_max(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin={
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"},
                             "default": {"cpu": "500m", "memory": "128Mi"},
                             "defaultRequest": {"cpu": "100m", "memory": "64Mi"}}]}})
    lr = berth.kubectl_json("get", "limits", "limits", "-n", ns)
    assert lr["spec"]["limits"][0]["max"] == {"cpu": "1"}
    berth.kubectl("create", "-f", "-", "-n", ns, stdin=pod("defaulted"))
    p = berth.kubectl_json("get", "pod", "defaulted", "-n", ns)
    resources = p["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"cpu": "100m", "memory": "64Mi"}
    assert resources["limits"] == {"cpu": "500m", "memory": "128Mi"}
    assert p["metadata"]["annotations"]["kubernetes.io/limit-ranger"].startswith(
        "LimitRanger plugin set: ")
    big = pod("big")
    big["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=big, check=False)
    assert r.returncode != 0
    assert 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in r.stderr
    assert berth.kubectl("get", "limitranges", "-n", ns).stdout.split()[:3] == [
        "NAME", "CREATED", "AT"]


def test_create_cronjob_over_protobuf(berth, ns):
    out = berth.kubectl("create", "cronjob", "cj", "-n", ns, "--image=busybox",
                        "--schedule=*/1 * * * *").stdout
    assert out.strip() == "cronjob.batch/cj created"
    cj = berth.kubectl_json("get", "cronjob", "cj", "-n", ns)
    assert cj["spec"]["schedule"] == "*/1 * * * *"
    container = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "busybox"
    assert container["imagePullPolicy"] == "Always"
    assert container["terminationMessagePath"] == "/dev/termination-log"


def test_autoscale_then_get_hpa_columns(berth, ns):
    berth.kubectl("create", "deployment", "x", "-n", ns, "--image=nginx:1.27")
    out = berth.kubectl("autoscale", "deploy/x", "-n", ns, "--min=2", "--max=5",
                        "--cpu-percent=50").stdout
    assert out.strip() == "horizontalpodautoscaler.autoscaling/x autoscaled"
    # The autoscaler brings the Deployment's one replica up to --min (upstream does so before
    # reading any metric); nginx asks for no cpu, so the utilization stays unknown.
    def row_at_min():
        lines = berth.kubectl("get", "hpa", "-n", ns).stdout.splitlines()
        assert lines[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS",
                                    "REPLICAS", "AGE"]
        row = lines[1].split()
        return row if row[6] == "2" else None
    row = eventually(row_at_min, what="the HPA at its 2 minimum replicas")
    assert row[:2] == ["x", "Deployment/x"]
    assert " ".join(row[2:4]) == "cpu: <unknown>/50%"
    assert row[4:7] == ["2", "5", "2"]
    # The same object through both versions.
    v2 = berth.kubectl_json("get", "horizontalpodautoscalers.v2.autoscaling", "x", "-n", ns)
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]
    v1 = berth.kubectl_json("get", "horizontalpodautoscalers.v1.autoscaling", "x", "-n", ns)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50


def test_create_ingress_and_its_table(berth, ns):
    out = berth.kubectl("create", "ingress", "web", "-n", ns, "--class=default",
                        "--rule=foo.com/bar=svc1:8080,tls=my-cert").stdout
    assert out.strip() == "ingress.networking.k8s.io/web created"
    ing = berth.kubectl_json("get", "ingress", "web", "-n", ns)
    path = ing["spec"]["rules"][0]["http"]["paths"][0]
    assert path["pathType"] == "Exact" and path["path"] == "/bar"
    lines = berth.kubectl("get", "ingress", "-n", ns).stdout.splitlines()
    assert lines[0].split() == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert lines[1].split()[:3] == ["web", "default", "foo.com"]
    bad = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "bad"},
           "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {
               "service": {"name": "s", "port": {"number": 80}}}}]}}]}}
    r = berth.kubectl("create", "-f", "-", "-n", ns, stdin=bad, check=False)
    assert "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified" \
        in r.stderr


def test_api_resources_lists_the_new_kinds(berth):
    out = berth.kubectl("api-resources", "-o", "name").stdout.split()
    for resource in ["resourcequotas", "limitranges", "podtemplates",
                     "horizontalpodautoscalers.autoscaling", "ingresses.networking.k8s.io",
                     "ingressclasses.networking.k8s.io", "networkpolicies.networking.k8s.io",
                     "runtimeclasses.node.k8s.io",
                     "certificatesigningrequests.certificates.k8s.io",
                     "validatingwebhookconfigurations.admissionregistration.k8s.io",
                     "mutatingwebhookconfigurations.admissionregistration.k8s.io",
                     "validatingadmissionpolicies.admissionregistration.k8s.io",
                     "validatingadmissionpolicybindings.admissionregistration.k8s.io",
                     "volumeattributesclasses.storage.k8s.io"]:
        assert resource in out, resource


def test_deployment_describe_shows_the_defaulted_strategy(berth, ns):
    berth.kubectl("create", "-f", "-", "-n", ns, stdin={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
                                     "ports": [{"containerPort": 80}]}]}}}})
    d = berth.kubectl_json("get", "deploy", "d", "-n", ns)
    assert d["spec"]["strategy"] == {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"
    out = berth.kubectl("describe", "deploy", "d", "-n", ns).stdout
    assert "StrategyType:           RollingUpdate" in out
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge" in out


def test_a_persistent_volume_is_retained_by_default(berth):
    berth.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "kinds-pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp/kinds-pv"}}})
    pv = berth.kubectl_json("get", "pv", "kinds-pv")
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem"
    berth.kubectl("delete", "pv", "kinds-pv")


def test_certificate_approve(berth):
    # A CSR's request is only stored here; `kubectl certificate approve` sets the condition.
    berth.kubectl("create", "-f", "-", stdin={
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "kinds-csr"},
        "spec": {"request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
                 "signerName": "example.com/signer", "usages": ["client auth"]}})
    lines = berth.kubectl("get", "csr", "kinds-csr").stdout.splitlines()
    assert lines[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION",
                                "CONDITION"]
    assert lines[1].split()[-1] == "Pending"
    berth.kubectl("certificate", "approve", "kinds-csr")
    csr = berth.kubectl_json("get", "csr", "kinds-csr")
    assert [c["type"] for c in csr["status"]["conditions"]] == ["Approved"]
    assert berth.kubectl("get", "csr", "kinds-csr").stdout.splitlines()[1].split()[-1] == "Approved"
    berth.kubectl("delete", "csr", "kinds-csr")

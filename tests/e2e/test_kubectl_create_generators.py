"""`kubectl create <kind> ...` generators: kubectl's typed clients send these bodies as
Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), which the server decodes into the
same JSON a JSON client would have sent."""

import base64
import json
import ssl
import urllib.error
import urllib.request
import uuid


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def no_empty_values(obj, path="$"):
    """Go's protobuf marshaller writes every value field; their zeros must not reach the store."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert v != "", f"{path}.{k} is an empty string"
            no_empty_values(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            no_empty_values(v, f"{path}[{i}]")


def test_create_namespace(berth):
    name = unique("gen-ns")
    out = berth.kubectl("create", "namespace", name).stdout
    assert out.strip() == f"namespace/{name} created"
    n = berth.kubectl_json("get", "namespace", name)
    assert n["kind"] == "Namespace" and n["metadata"]["name"] == name
    assert n["metadata"]["uid"] and n["metadata"]["creationTimestamp"]
    no_empty_values(n["metadata"])
    berth.kubectl("delete", "namespace", name, "--wait=false")


def test_create_priorityclass(berth):
    name = unique("gen-hp")
    berth.kubectl("create", "priorityclass", name, "--value=1000", "--description=important",
                  "--preemption-policy=Never")
    pc = berth.kubectl_json("get", "priorityclass", name)
    assert pc["apiVersion"] == "scheduling.k8s.io/v1"
    assert pc["value"] == 1000
    assert pc["description"] == "important"
    assert pc["preemptionPolicy"] == "Never"
    assert not pc.get("globalDefault", False)
    no_empty_values(pc)
    berth.kubectl("delete", "priorityclass", name)


def test_create_priorityclass_with_value_zero_keeps_the_value(berth):
    name = unique("gen-zero")
    berth.kubectl("create", "priorityclass", name, "--value=0")
    assert berth.kubectl_json("get", "priorityclass", name)["value"] == 0
    berth.kubectl("delete", "priorityclass", name)


def test_create_deployment(berth, ns):
    berth.kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3",
                  "--port=8080", "-n", ns)
    d = berth.kubectl_json("get", "deployment", "web", "-n", ns)
    assert d["apiVersion"] == "apps/v1" and d["kind"] == "Deployment"
    assert d["metadata"]["labels"] == {"app": "web"}
    spec = d["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["template"]["metadata"]["labels"] == {"app": "web"}
    [c] = spec["template"]["spec"]["containers"]
    assert c["name"] == "nginx" and c["image"] == "nginx:1.27"
    [port] = c["ports"]
    assert port["containerPort"] == 8080 and "hostPort" not in port
    # Value fields Go always marshals (stdin, tty, workingDir, ...) are not stored as zeros.
    for field in ("stdin", "stdinOnce", "tty", "workingDir"):
        assert field not in c, field
    assert "paused" not in spec and "minReadySeconds" not in spec
    no_empty_values(d)


def test_create_deployment_with_command_and_zero_replicas(berth, ns):
    berth.kubectl("create", "deployment", "sleeper", "--image=busybox", "--replicas=0",
                  "-n", ns, "--", "sleep", "3600")
    d = berth.kubectl_json("get", "deployment", "sleeper", "-n", ns)
    assert d["spec"]["replicas"] == 0, "a pointer field set to zero is kept"
    [c] = d["spec"]["template"]["spec"]["containers"]
    assert c["image"] == "busybox"
    assert c["command"] == ["sleep", "3600"]


def test_create_configmap_from_literals(berth, ns):
    berth.kubectl("create", "configmap", "settings", "--from-literal=mode=fast",
                  "--from-literal=level=3", "-n", ns)
    cm = berth.kubectl_json("get", "configmap", "settings", "-n", ns)
    assert cm["data"] == {"mode": "fast", "level": "3"}
    assert "binaryData" not in cm


def test_create_secret_generic(berth, ns):
    berth.kubectl("create", "secret", "generic", "creds", "--from-literal=password=hunter2",
                  "--type=Opaque", "-n", ns)
    s = berth.kubectl_json("get", "secret", "creds", "-n", ns)
    assert s["type"] == "Opaque"
    assert base64.b64decode(s["data"]["password"]) == b"hunter2"


def test_create_serviceaccount(berth, ns):
    berth.kubectl("create", "serviceaccount", "robot", "-n", ns)
    sa = berth.kubectl_json("get", "serviceaccount", "robot", "-n", ns)
    assert sa["kind"] == "ServiceAccount" and sa["metadata"]["name"] == "robot"
    assert sa["metadata"]["namespace"] == ns


def test_create_service_clusterip(berth, ns):
    berth.kubectl("create", "service", "clusterip", "front", "--tcp=80:8080", "-n", ns)
    svc = berth.kubectl_json("get", "service", "front", "-n", ns)
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"] == {"app": "front"}
    [port] = svc["spec"]["ports"]
    assert port["port"] == 80 and port["targetPort"] == 8080
    assert port["protocol"] == "TCP" and port["name"] == "80-8080"
    assert "nodePort" not in port


def test_create_pdb(berth, ns):
    berth.kubectl("create", "pdb", "keep-one", "--selector=app=x", "--min-available=1",
                  "-n", ns)
    pdb = berth.kubectl_json("get", "pdb", "keep-one", "-n", ns)
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert "maxUnavailable" not in pdb["spec"]


def test_create_pdb_with_percentage(berth, ns):
    berth.kubectl("create", "pdb", "half", "--selector=app=y", "--max-unavailable=50%", "-n", ns)
    pdb = berth.kubectl_json("get", "pdb", "half", "-n", ns)
    assert pdb["spec"]["maxUnavailable"] == "50%"


def test_create_job(berth, ns):
    berth.kubectl("create", "job", "once", "--image=busybox", "-n", ns, "--", "echo", "hi")
    job = berth.kubectl_json("get", "job", "once", "-n", ns)
    assert job["apiVersion"] == "batch/v1"
    tmpl = job["spec"]["template"]["spec"]
    assert tmpl["restartPolicy"] == "Never"
    [c] = tmpl["containers"]
    assert c["image"] == "busybox" and c["command"] == ["echo", "hi"]


def post(berth, path, body, content_type):
    ctx = ssl.create_default_context(cafile=berth.ca_file())
    req = urllib.request.Request(berth.url + path, data=body, method="POST", headers={
        "Content-Type": content_type, "Authorization": f"Bearer {berth.token()}",
        "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_malformed_protobuf_is_a_bad_request(berth, ns):
    for body in (b"not protobuf", b"k8s\x00\x12\xff\xff\x03", b"k8s\x00\x0b"):
        code, status = post(berth, f"/api/v1/namespaces/{ns}/configmaps", body,
                            "application/vnd.kubernetes.protobuf")
        assert code == 400, status
        assert status["kind"] == "Status" and status["reason"] == "BadRequest"
        assert "ConfigMap" in status["message"]

"""Admission webhooks and ValidatingAdmissionPolicies as a cluster's user meets them
(upstream's test/e2e/apimachinery/webhook.go and validatingadmissionpolicy.go): an HTTPS
webhook server started by the test, registered by URL and by Service + EndpointSlice, that
labels pods and refuses some; failurePolicy with the server gone; a policy refusing
Deployments over 5 replicas, and one that only warns.

The server here is the module's own: webhooks act on every request of a cluster, so they are
kept away from the session's shared server; each configuration also selects only the test's
namespaces by label."""

import base64
import datetime
import http.server
import ipaddress
import json
import socket
import ssl
import threading

import pytest
from conftest import Berth, eventually
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: The label that lets this module's webhooks see a namespace.
SELECTOR = {"webhook-e2e": "on"}


def _certificates(tmp, names):
    """A CA and a serving certificate for `names` (DNS names and IPs); returns the CA's PEM
    and the paths of the serving certificate and key."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook-e2e-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                       crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans = []
    for n in names:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            sans.append(x509.DNSName(n))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = tmp / "tls.crt", tmp / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM), cert_path, key_path


class Reviews(http.server.BaseHTTPRequestHandler):
    """The webhook: `/mutate` labels the object `mutated: "yes"`; `/validate` refuses an object
    labelled `deny: "yes"` (403, with a message) and warns about every object it sees."""

    seen = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        Reviews.seen.append((self.path.split("?")[0], request))
        response = {"uid": request["uid"], "allowed": True}
        obj = request.get("object") or {}
        labels = (obj.get("metadata") or {}).get("labels")
        if self.path.startswith("/observe"):
            # Admits what it is told of, except the deletion of an object labelled keep.
            old = request.get("oldObject") or {}
            if ((old.get("metadata") or {}).get("labels") or {}).get("keep") == "yes":
                response["allowed"] = False
                response["status"] = {"code": 403, "message": "this one is kept"}
        elif self.path.startswith("/mutate"):
            if labels is None:
                patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
            else:
                patch = [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        elif self.path.startswith("/validate"):
            response["warnings"] = [f"the test webhook saw {request['operation']}"]
            if (labels or {}).get("deny") == "yes":
                response["allowed"] = False
                response["status"] = {"code": 403, "message": "pods labelled deny are not welcome"}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """The cluster and the webhook server: (berth, ca_pem, port)."""
    tmp = tmp_path_factory.mktemp("webhooks")
    ca, cert, key = _certificates(tmp, ["127.0.0.1", "hooks.webhook-e2e.svc"])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Reviews)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # --v=1: berth's information messages, among them the audit annotations.
    b = Berth.start(tmp / "berth", nodes=1, args=("--v=1",))
    yield b, ca, server.server_address[1]
    b.stop()
    server.shutdown()


def _namespace(b, name):
    b.kubectl("apply", "-f", "-", stdin={"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": name, "labels": SELECTOR}})
    return name


def _webhook(name, client_config, ca, *, mutating, failure="Fail", resources=("pods",)):
    hook = {
        "name": name,
        "clientConfig": {**client_config, "caBundle": base64.b64encode(ca).decode()},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": list(resources)}],
        "namespaceSelector": {"matchLabels": SELECTOR},
        "failurePolicy": failure,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }
    if mutating:
        hook["reinvocationPolicy"] = "IfNeeded"
    return hook


def _configuration(kind, name, webhooks):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": webhooks}


def _pod(name, namespace, labels=None):
    meta = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": "e2e-manual",
                     "containers": [{"name": "c", "image": "nginx:1.27"}]}}


def _create_until(b, manifest, check, what):
    """Creates `manifest` (deleting any earlier try) until `check(kubectl result)` holds: a
    configuration takes effect once the server's watch delivers it."""
    meta = manifest["metadata"]

    def attempt():
        b.kubectl("delete", manifest["kind"].lower(), meta["name"], "-n", meta["namespace"],
                  "--ignore-not-found", "--wait=false", check=False)
        r = b.kubectl("create", "-f", "-", stdin=manifest, check=False)
        return r if check(r) else None

    return eventually(attempt, timeout=30, what=what)


def test_url_webhooks_mutate_then_validate_through_kubectl(hooks):
    b, ca, port = hooks
    ns = _namespace(b, "webhook-url")
    url = f"https://127.0.0.1:{port}"
    b.kubectl("apply", "-f", "-", stdin=[
        _configuration("MutatingWebhookConfiguration", "label-pods",
                       [_webhook("label.webhook.example.com", {"url": f"{url}/mutate"}, ca,
                                 mutating=True)]),
        _configuration("ValidatingWebhookConfiguration", "deny-pods",
                       [_webhook("deny.webhook.example.com", {"url": f"{url}/validate"}, ca,
                                 mutating=False)]),
    ])
    # The mutating webhook labels the pod; the validating one warns about it.
    r = _create_until(b, _pod("labelled", ns), lambda r: r.returncode == 0
                      and "Warning: the test webhook saw CREATE" in r.stderr, "the webhooks")
    assert "pod/labelled created" in r.stdout
    pod = b.kubectl_json("get", "pod", "labelled", "-n", ns)
    assert pod["metadata"]["labels"] == {"mutated": "yes"}
    # The request the webhook got is an AdmissionReview v1 request.
    path, request = next((p, r) for p, r in Reviews.seen
                         if p == "/validate" and r.get("name") == "labelled")
    assert request["kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert request["resource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert request["namespace"] == ns and request["operation"] == "CREATE"
    assert request["object"]["metadata"]["labels"] == {"mutated": "yes"}
    assert request["userInfo"]["username"]
    assert request["dryRun"] is False
    # The validating webhook refuses with its own code and message.
    r = b.kubectl("create", "-f", "-", stdin=_pod("refused", ns, {"deny": "yes"}), check=False)
    assert r.returncode != 0
    assert ('admission webhook "deny.webhook.example.com" denied the request: '
            'pods labelled deny are not welcome') in r.stderr
    # A namespace the selector leaves out is not sent to the webhooks.
    b.kubectl("create", "namespace", "webhook-unselected")
    b.kubectl("create", "-f", "-", stdin=_pod("plain", "webhook-unselected", {"deny": "yes"}))
    plain = b.kubectl_json("get", "pod", "plain", "-n", "webhook-unselected")
    assert "mutated" not in plain["metadata"]["labels"]
    # dryRun requests reach webhooks with no side effects, and say so.
    r = b.kubectl("create", "-f", "-", "--dry-run=server", "-o", "json",
                  stdin=_pod("dry", ns), check=False)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metadata"]["labels"] == {"mutated": "yes"}
    assert any(r.get("name") == "dry" and r["dryRun"] for _, r in Reviews.seen)
    b.kubectl("delete", "mutatingwebhookconfiguration", "label-pods")
    b.kubectl("delete", "validatingwebhookconfiguration", "deny-pods")


def test_service_webhook_reached_through_a_manual_endpointslice(hooks):
    b, ca, port = hooks
    ns = _namespace(b, "webhook-service")
    b.kubectl("apply", "-f", "-", stdin=[
        _namespace_manifest("webhook-e2e"),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks", "namespace": "webhook-e2e"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "hooks-manual", "namespace": "webhook-e2e",
                      "labels": {"kubernetes.io/service-name": "hooks"}},
         "addressType": "IPv4",
         "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
         "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]},
    ])
    service = {"service": {"namespace": "webhook-e2e", "name": "hooks", "path": "/validate",
                           "port": 443}}
    b.kubectl("apply", "-f", "-", stdin=_configuration(
        "ValidatingWebhookConfiguration", "deny-by-service",
        [_webhook("svc.webhook.example.com", service, ca, mutating=False)]))
    r = _create_until(b, _pod("refused", ns, {"deny": "yes"}), lambda r: r.returncode != 0
                      and "svc.webhook.example.com" in r.stderr, "the service webhook")
    assert ('admission webhook "svc.webhook.example.com" denied the request: '
            'pods labelled deny are not welcome') in r.stderr
    b.kubectl("create", "-f", "-", stdin=_pod("welcome", ns))
    b.kubectl("delete", "validatingwebhookconfiguration", "deny-by-service")


def _namespace_manifest(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_failure_policy_decides_when_the_webhook_is_down(hooks):
    b, ca, _ = hooks
    ns = _namespace(b, "webhook-down")
    down = f"https://127.0.0.1:{_closed_port()}/validate"
    b.kubectl("apply", "-f", "-", stdin=_configuration(
        "ValidatingWebhookConfiguration", "down-fail",
        [_webhook("fail.webhook.example.com", {"url": down}, ca, mutating=False)]))
    r = _create_until(b, _pod("closed", ns), lambda r: r.returncode != 0, "failurePolicy Fail")
    assert 'Internal error occurred: failed calling webhook "fail.webhook.example.com": ' \
           'failed to call webhook: Post "https://127.0.0.1:' in r.stderr
    assert "connection refused" in r.stderr
    # Ignore lets the request through.
    hook = _webhook("fail.webhook.example.com", {"url": down}, ca, mutating=False,
                    failure="Ignore")
    b.kubectl("apply", "-f", "-", stdin=_configuration(
        "ValidatingWebhookConfiguration", "down-fail", [hook]))
    _create_until(b, _pod("open", ns), lambda r: r.returncode == 0, "failurePolicy Ignore")
    b.kubectl("delete", "validatingwebhookconfiguration", "down-fail")


def _policy(name, expression, **spec):
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [{
                         "apiGroups": ["apps"], "apiVersions": ["v1"],
                         "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                     "validations": [{"expression": expression}], **spec}}


def _binding(name, policy, actions, namespace_labels):
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
            "spec": {"policyName": policy, "validationActions": actions,
                     "matchResources": {"namespaceSelector": {"matchLabels": namespace_labels}}}}


def _deployment(name, namespace, replicas):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}


def test_validating_admission_policy_denies_replicas_over_five(hooks):
    b, _, _ = hooks
    ns = "vap-deny"
    b.kubectl("apply", "-f", "-", stdin={"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": ns, "labels": {"vap": "deny"}}})
    b.kubectl("apply", "-f", "-", stdin=[
        _policy("demo-policy.example.com", "object.spec.replicas <= 5"),
        _binding("demo-binding-test.example.com", "demo-policy.example.com", ["Deny"],
                 {"vap": "deny"}),
    ])
    r = _create_until(b, _deployment("nginx", ns, 6), lambda r: r.returncode != 0,
                      "the policy")
    assert ("The deployments \"nginx\" is invalid: : ValidatingAdmissionPolicy "
            "'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied "
            "request: failed expression: object.spec.replicas <= 5") in r.stderr
    b.kubectl("create", "-f", "-", stdin=_deployment("small", ns, 3))
    b.kubectl("delete", "validatingadmissionpolicybinding", "demo-binding-test.example.com")
    b.kubectl("delete", "validatingadmissionpolicy", "demo-policy.example.com")


def test_warn_action_shows_a_warning_in_kubectl(hooks):
    b, _, _ = hooks
    ns = "vap-warn"
    b.kubectl("apply", "-f", "-", stdin={"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": ns, "labels": {"vap": "warn"}}})
    policy = _policy("warn-policy.example.com", "object.spec.replicas <= 5")
    policy["spec"]["validations"][0]["messageExpression"] = \
        "'replicas ' + string(object.spec.replicas) + ' is over 5'"
    b.kubectl("apply", "-f", "-", stdin=[
        policy,
        _binding("warn-binding.example.com", "warn-policy.example.com", ["Warn"], {"vap": "warn"}),
    ])
    r = _create_until(b, _deployment("big", ns, 8), lambda r: r.returncode == 0
                      and "Warning:" in r.stderr, "the warning")
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'warn-policy.example.com' "
            "with binding 'warn-binding.example.com': replicas 8 is over 5") in r.stderr
    b.kubectl("delete", "validatingadmissionpolicybinding", "warn-binding.example.com")
    b.kubectl("delete", "validatingadmissionpolicy", "warn-policy.example.com")


def test_pod_security_enforces_and_warns_by_namespace_labels(hooks):
    b, _, _ = hooks
    b.kubectl("apply", "-f", "-", stdin=[
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "psa-restricted",
            "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "psa-warn", "labels": {"pod-security.kubernetes.io/warn": "baseline"}}},
    ])
    r = b.kubectl("create", "-f", "-", stdin=_pod("plain", "psa-restricted"), check=False)
    assert r.returncode != 0
    assert ('pods "plain" is forbidden: violates PodSecurity "restricted:latest": '
            'allowPrivilegeEscalation != false (container "c" must set '
            'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
            '(container "c" must set securityContext.capabilities.drop=["ALL"]), '
            'runAsNonRoot != true (pod or container "c" must set '
            'securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must '
            'set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
            ) in r.stderr
    compliant = _pod("compliant", "psa-restricted")
    compliant["spec"]["securityContext"] = {"runAsNonRoot": True,
                                            "seccompProfile": {"type": "RuntimeDefault"}}
    compliant["spec"]["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    b.kubectl("create", "-f", "-", stdin=compliant)
    privileged = _pod("privileged", "psa-warn")
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    r = b.kubectl("create", "-f", "-", stdin=privileged)
    assert ('Warning: would violate PodSecurity "baseline:latest": privileged '
            '(container "c" must not set securityContext.privileged=true)') in r.stderr


def test_mutating_webhooks_are_told_of_deletions_and_may_not_patch_them(hooks):
    b, ca, port = hooks
    ns = _namespace(b, "webhook-delete")
    url = f"https://127.0.0.1:{port}"
    observe = _webhook("observe.webhook.example.com", {"url": f"{url}/observe"}, ca,
                       mutating=True, resources=("configmaps",))
    observe["rules"][0]["operations"] = ["DELETE"]
    observe["objectSelector"] = {"matchExpressions": [{"key": "patch", "operator": "DoesNotExist"}]}
    patching = _webhook("patch.webhook.example.com", {"url": f"{url}/mutate"}, ca,
                        mutating=True, resources=("configmaps",))
    patching["rules"][0]["operations"] = ["DELETE"]
    patching["objectSelector"] = {"matchLabels": {"patch": "yes"}}
    b.kubectl("apply", "-f", "-", stdin=_configuration(
        "MutatingWebhookConfiguration", "observe-deletions", [observe, patching]))

    def configmap(name, labels):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": ns, "labels": labels}}

    b.kubectl("apply", "-f", "-", stdin=[configmap("kept", {"keep": "yes"}),
                                          configmap("patched", {"patch": "yes"})])

    def refused():
        b.kubectl("create", "configmap", "gone", "-n", ns, check=False)
        r = b.kubectl("delete", "configmap", "gone", "-n", ns, check=False)
        return r if any(p == "/observe" and q.get("name") == "gone"
                        for p, q in Reviews.seen) else None

    eventually(refused, timeout=30, what="the webhook told of a deletion")
    _, request = next((p, q) for p, q in Reviews.seen
                      if p == "/observe" and q.get("name") == "gone")
    assert request["operation"] == "DELETE"
    assert request["object"] is None
    assert request["oldObject"]["metadata"]["name"] == "gone"
    assert request["options"]["kind"] == "DeleteOptions"
    r = b.kubectl("delete", "configmap", "kept", "-n", ns, check=False)
    assert r.returncode != 0
    assert ('admission webhook "observe.webhook.example.com" denied the request: '
            'this one is kept') in r.stderr
    r = b.kubectl("delete", "configmap", "patched", "-n", ns, check=False)
    assert r.returncode != 0
    assert ('Internal error occurred: admission webhook "patch.webhook.example.com" attempted '
            'to modify the object, which is not supported for this operation') in r.stderr
    b.kubectl("get", "configmap", "kept", "patched", "-n", ns)
    b.kubectl("delete", "mutatingwebhookconfiguration", "observe-deletions")


def test_policy_authorizer_refuses_a_user_without_the_right(hooks):
    b, _, _ = hooks
    ns = "vap-authz"
    b.kubectl("apply", "-f", "-", stdin=[
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": ns, "labels": {"vap": "authz"}}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "deployer", "namespace": ns},
         "rules": [{"apiGroups": ["apps"], "resources": ["deployments"],
                    "verbs": ["create", "get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "deployer", "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]},
    ])
    policy = _policy("secrets-listers.example.com",
                     "authorizer.group('').resource('secrets').namespace(request.namespace)"
                     ".check('list').allowed()")
    policy["spec"]["validations"][0]["message"] = "only who may list secrets may deploy here"
    policy["spec"]["auditAnnotations"] = [
        {"key": "deployer", "valueExpression": "'deployed by ' + request.userInfo.username"},
        {"key": "never", "valueExpression": "null"},
    ]
    b.kubectl("apply", "-f", "-", stdin=[
        policy,
        _binding("secrets-listers-binding.example.com", "secrets-listers.example.com",
                 ["Deny"], {"vap": "authz"}),
    ])
    manifest = _deployment("by-alice", ns, 1)

    def attempt():
        b.kubectl("delete", "deployment", "by-alice", "-n", ns, "--ignore-not-found",
                  "--wait=false", check=False)
        r = b.kubectl("--as=alice", "create", "-f", "-", stdin=manifest, check=False)
        return r if r.returncode != 0 and "secrets" in r.stderr else None

    r = eventually(attempt, timeout=30, what="the policy")
    assert ("ValidatingAdmissionPolicy 'secrets-listers.example.com' with binding "
            "'secrets-listers-binding.example.com' denied request: only who may list secrets "
            "may deploy here") in r.stderr
    # The administrator may list secrets: admitted, and the audit annotation recorded.
    b.kubectl("create", "-f", "-", stdin=_deployment("by-admin", ns, 1))
    # Once alice may list secrets, she is admitted too.
    b.kubectl("create", "role", "secret-lister", "-n", ns, "--verb=list", "--resource=secrets")
    b.kubectl("create", "rolebinding", "secret-lister", "-n", ns, "--role=secret-lister",
              "--user=alice")
    eventually(lambda: b.kubectl("--as=alice", "create", "-f", "-", stdin=manifest,
                                 check=False).returncode == 0,
               timeout=30, what="alice admitted")
    log = b.log_path.read_text()
    assert 'key="secrets-listers.example.com/deployer" value="deployed by alice"' in log, \
        log[-3000:]
    assert "secrets-listers.example.com/never" not in log
    b.kubectl("delete", "validatingadmissionpolicybinding", "secrets-listers-binding.example.com")
    b.kubectl("delete", "validatingadmissionpolicy", "secrets-listers.example.com")

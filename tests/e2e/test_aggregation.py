"""The aggregation layer as a user of an extension API server meets it: APIServices listed
(`kubectl get apiservices`, the local ones of every served group version and
`v1beta1.metrics.k8s.io` among them), an extension server registered by Service (no
selector) + EndpointSlice + APIService with its CA, requests under its group version proxied
with the caller's identity in `X-Remote-*` headers, its resources in discovery
(`kubectl api-resources`, `kubectl get`), its availability following the backend, and a
deleted APIService no longer routed (upstream's test/e2e/apimachinery/aggregator.go, with a
small Python HTTPS server in place of the sample-apiserver's pod)."""

import base64
import datetime
import json
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import eventually

GROUP = "wardle.example.com"
VERSION = "v1alpha1"
APISERVICE = f"{VERSION}.{GROUP}"

cryptography = pytest.importorskip("cryptography")

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def certificates(dns_name):
    """A CA and a serving certificate for `dns_name` it signed, as PEM bytes."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wardle-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_name)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem


class Wardle:
    """A tiny extension API server: discovery of `wardle.example.com/v1alpha1` and its
    namespaced `flunders`, which it lists, creates and gets; every request's headers are
    kept, and each flunder it answers with carries the caller named in `X-Remote-User`."""

    def __init__(self, dns_name, client_ca=None):
        self.requests = []
        self.flunders = {}
        ca, cert, key = certificates(dns_name)
        self.ca_pem = ca
        self._dir = tempfile.TemporaryDirectory()
        cert_file, key_file = Path(self._dir.name, "tls.crt"), Path(self._dir.name, "tls.key")
        cert_file.write_bytes(cert)
        key_file.write_bytes(key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        if client_ca:
            # The front proxy's certificate, as an extension server built on k8s.io/apiserver
            # checks it against requestheader-client-ca-file.
            context.verify_mode = ssl.CERT_OPTIONAL
            context.load_verify_locations(cadata=client_ca)
        wardle = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def caller(self):
                return {"user": self.headers.get("X-Remote-User", ""),
                        "groups": self.headers.get_all("X-Remote-Group") or []}

            def record(self):
                peer = self.connection.getpeercert() or {}
                cn = next((v for rdn in peer.get("subject", ()) for k, v in rdn if k == "commonName"), None)
                wardle.requests.append((self.command, self.path, dict(self.headers.items()), cn))

            def do_GET(self):
                self.record()
                path = self.path.split("?")[0].rstrip("/")
                base = f"/apis/{GROUP}/{VERSION}"
                if path == base:
                    return self.answer(200, {
                        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}",
                        "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": True,
                                       "kind": "Flunder", "shortNames": ["fl"],
                                       "verbs": ["create", "get", "list"]}]})
                parts = path[len(base):].strip("/").split("/")
                if path.startswith(base) and len(parts) == 3 and parts[0] == "namespaces" and parts[2] == "flunders":
                    items = [dict(f, metadata=dict(f["metadata"], annotations={"caller": json.dumps(self.caller())}))
                             for (ns, _), f in sorted(wardle.flunders.items()) if ns == parts[1]]
                    return self.answer(200, {"kind": "FlunderList", "apiVersion": f"{GROUP}/{VERSION}",
                                             "metadata": {"resourceVersion": "1"}, "items": items})
                if path.startswith(base) and len(parts) == 4 and parts[2] == "flunders":
                    f = wardle.flunders.get((parts[1], parts[3]))
                    if f:
                        return self.answer(200, f)
                return self.answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                         "reason": "NotFound", "code": 404, "message": "not found"})

            def do_POST(self):
                self.record()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                ns = self.path.split("/")[5]
                body.setdefault("metadata", {})["namespace"] = ns
                body["metadata"]["resourceVersion"] = "1"
                body["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
                wardle.flunders[(ns, body["metadata"]["name"])] = body
                return self.answer(201, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def registration(ns, port, ca_pem, name="api"):
    """The Service (no selector), its EndpointSlice at 127.0.0.1:`port` and the APIService."""
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": f"{name}-1", "namespace": ns,
                      "labels": {"kubernetes.io/service-name": name}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
         "ports": [{"name": "https", "port": port, "protocol": "TCP"}]},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": APISERVICE, "labels": {"e2e-apiservice-test": "true"}},
         "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 2000, "versionPriority": 200,
                  "service": {"namespace": ns, "name": name, "port": 443},
                  "caBundle": base64.b64encode(ca_pem).decode()}},
    ]


def available(berth, name=APISERVICE):
    obj = berth.kubectl_json("get", "apiservice", name)
    conditions = obj.get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == "Available"), None)


def test_local_api_services_are_listed_available(berth):
    out = berth.kubectl("get", "apiservices").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    for name in ["v1.", "v1.apps", "v1.batch", "v1beta1.metrics.k8s.io", "v1.apiregistration.k8s.io"]:
        assert name in rows, out
        assert rows[name][1:3] == ["Local", "True"], rows[name]
    core = berth.kubectl_json("get", "apiservice", "v1.")
    assert core["spec"]["groupPriorityMinimum"] == 18000
    assert core["spec"].get("service") is None
    cond = available(berth, "v1.apps")
    assert (cond["status"], cond["reason"]) == ("True", "Local")


def test_validation_speaks_upstreams_words(berth):
    bad = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "wardle"},
           "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 0, "versionPriority": 1,
                    "insecureSkipTLSVerify": True, "caBundle": "AAAA",
                    "service": {"namespace": "default", "name": "x"}}}
    r = berth.kubectl("create", "-f", "-", stdin=bad, check=False)
    assert r.returncode != 0
    assert 'metadata.name: Invalid value: "wardle": must be `spec.version+"."+spec.group`: ' \
           '"v1alpha1.wardle.example.com"' in r.stderr, r.stderr
    assert "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000" in r.stderr
    assert "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present" in r.stderr


def test_the_front_proxy_is_published(berth):
    cm = berth.kubectl_json("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication")
    data = cm["data"]
    assert json.loads(data["requestheader-allowed-names"]) == ["front-proxy-client"]
    assert json.loads(data["requestheader-username-headers"]) == ["X-Remote-User"]
    assert json.loads(data["requestheader-group-headers"]) == ["X-Remote-Group"]
    assert json.loads(data["requestheader-extra-headers-prefix"]) == ["X-Remote-Extra-"]
    assert "BEGIN CERTIFICATE" in data["requestheader-client-ca-file"]
    assert data["client-ca-file"] == Path(berth.ca_file()).read_text()
    berth.kubectl("get", "role", "-n", "kube-system", "extension-apiserver-authentication-reader")


def front_proxy_ca(berth):
    cm = berth.kubectl_json("get", "configmap", "-n", "kube-system", "extension-apiserver-authentication")
    return cm["data"]["requestheader-client-ca-file"]


def test_an_extension_server_is_proxied_discovered_and_followed(berth, ns):
    wardle = Wardle(f"api.{ns}.svc", client_ca=front_proxy_ca(berth))
    try:
        berth.kubectl("create", "-f", "-", stdin=registration(ns, wardle.port, wardle.ca_pem))

        def passed():
            c = available(berth)
            return c and c["status"] == "True" and c["reason"] == "Passed" and c

        cond = eventually(passed, what="the APIService to pass its checks")
        assert cond["message"] == "all checks passed"
        rows = {line.split()[0]: line.split() for line in berth.kubectl("get", "apiservices").stdout.splitlines()}
        assert rows[APISERVICE][1:3] == [f"{ns}/api", "True"]

        # Requests are proxied, the caller named in X-Remote-* headers, credentials not sent.
        flunder = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Flunder",
                   "metadata": {"name": "f1"}, "spec": {"reference": "r"}}
        berth.kubectl("create", "-n", ns, "-f", "-", stdin=flunder)
        whoami = berth.kubectl_json("auth", "whoami")["status"]["userInfo"]
        listed = json.loads(berth.kubectl(
            "get", "--raw", f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/flunders").stdout)
        assert [f["metadata"]["name"] for f in listed["items"]] == ["f1"]
        caller = json.loads(listed["items"][0]["metadata"]["annotations"]["caller"])
        assert caller["user"] == whoami["username"]
        assert set(whoami.get("groups", [])) <= set(caller["groups"])
        assert all("Authorization" not in headers and "authorization" not in headers
                   for _, _, headers, _ in wardle.requests)
        # Every request came with the front proxy's client certificate.
        assert {cn for *_, cn in wardle.requests} == {"front-proxy-client"}

        # Discovery lists the group and its resources; kubectl finds them by name.
        groups = json.loads(berth.kubectl("get", "--raw", "/apis").stdout)["groups"]
        wardle_group = next(g for g in groups if g["name"] == GROUP)
        assert wardle_group["preferredVersion"]["version"] == VERSION
        group = json.loads(berth.kubectl("get", "--raw", f"/apis/{GROUP}").stdout)
        assert group["kind"] == "APIGroup"
        eventually(lambda: "flunders" in berth.kubectl("api-resources", "--api-group", GROUP).stdout,
                   what="flunders in kubectl api-resources")
        out = berth.kubectl("get", "flunders", "-n", ns).stdout
        assert "f1" in out, out
        got = berth.kubectl_json("get", "flunder", "f1", "-n", ns)
        assert got["spec"] == {"reference": "r"}

        # The APIService is patched and listed by label, as the conformance spec does.
        berth.kubectl("patch", "apiservice", APISERVICE, "--type=merge",
                      "-p", json.dumps({"spec": {"versionPriority": 400}}))
        assert berth.kubectl_json("get", "apiservice", APISERVICE)["spec"]["versionPriority"] == 400
        labelled = berth.kubectl_json("get", "apiservices", "-l", "e2e-apiservice-test=true")["items"]
        assert [a["metadata"]["name"] for a in labelled] == [APISERVICE]
        # A condition of the user's own, written through /status, stays beside Available.
        updated = {"type": "StatusUpdated", "status": "True", "reason": "E2E",
                   "message": "Set from an e2e test", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        berth.kubectl("patch", "apiservice", APISERVICE, "--subresource=status", "--type=json",
                      "-p", json.dumps([{"op": "add", "path": "/status/conditions/-", "value": updated}]))
        types = [c["type"] for c in berth.kubectl_json("get", "apiservice", APISERVICE)["status"]["conditions"]]
        assert sorted(types) == ["Available", "StatusUpdated"]
        bad = berth.kubectl("patch", "apiservice", APISERVICE, "--subresource=status", "--type=json",
                            "-p", json.dumps([{"op": "add", "path": "/status/conditions/-",
                                               "value": dict(updated, type="X", status="Maybe")}]),
                            check=False)
        assert 'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"' in bad.stderr

        # A stopped backend makes the APIService unavailable, and its requests 503.
        wardle.stop()

        def failed():
            c = available(berth)
            return c and c["status"] == "False" and c

        cond = eventually(failed, what="the APIService to become unavailable")
        assert cond["reason"] == "FailedDiscoveryCheck", cond
        r = berth.kubectl("get", "--raw", f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/flunders", check=False)
        assert r.returncode != 0
        assert "ServiceUnavailable" in r.stderr or "unable to handle the request" in r.stderr, r.stderr
        rows = {line.split()[0]: line for line in berth.kubectl("get", "apiservices").stdout.splitlines()}
        assert "False (FailedDiscoveryCheck)" in rows[APISERVICE]

        # The condition of the user's own is still there after the checks wrote theirs.
        types = [c["type"] for c in berth.kubectl_json("get", "apiservice", APISERVICE)["status"]["conditions"]]
        assert sorted(types) == ["Available", "StatusUpdated"]

        # A deleted APIService (deleted by label, as the conformance spec's collection
        # delete) no longer routes its group version.
        out = berth.kubectl("delete", "apiservices", "-l", "e2e-apiservice-test=true").stdout
        assert APISERVICE in out
        r = berth.kubectl("get", "--raw", f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/flunders", check=False)
        assert r.returncode != 0
        assert "NotFound" in r.stderr or "could not find the requested resource" in r.stderr, r.stderr
        groups = json.loads(berth.kubectl("get", "--raw", "/apis").stdout)["groups"]
        assert GROUP not in [g["name"] for g in groups]
    finally:
        if wardle.thread.is_alive():
            wardle.stop()
        berth.kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found")


def test_a_missing_service_is_reported(berth, ns):
    name = f"v1.missing-{ns}.example.com"
    berth.kubectl("create", "-f", "-", stdin={
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
        "spec": {"group": f"missing-{ns}.example.com", "version": "v1", "groupPriorityMinimum": 100,
                 "versionPriority": 10, "insecureSkipTLSVerify": True,
                 "service": {"namespace": ns, "name": "nowhere"}}})
    try:
        def reported():
            c = available(berth, name)
            return c and c["status"] == "False" and c

        cond = eventually(reported, what="ServiceNotFound")
        assert cond["reason"] == "ServiceNotFound"
        assert cond["message"] == f'service/nowhere in "{ns}" is not present'
        assert berth.kubectl_json("get", "apiservice", name)["spec"]["service"]["port"] == 443
        r = berth.kubectl("get", "--raw", f"/apis/missing-{ns}.example.com/v1", check=False)
        assert r.returncode != 0
    finally:
        berth.kubectl("delete", "apiservice", name, "--ignore-not-found")

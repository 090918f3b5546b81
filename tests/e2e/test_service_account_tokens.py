"""ServiceAccount tokens as a kubectl user sees them: `kubectl create token` (with audiences,
durations and a bound pod), the token used in a kubeconfig with a Role (allowed and denied
answers), TokenReview, refused tokens (wrong audience, deleted account, deleted bound pod,
garbage), and a legacy `kubernetes.io/service-account-token` Secret filled by the token
controller. Expiry is checked by the unit tests (the minimum duration is 10 minutes)."""

import base64
import json
import stat
import subprocess

import pytest

from conftest import KUBECTL_TIMEOUT, eventually, pod
from test_rbac import http

NS = "tok"


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    from conftest import Berth

    b = Berth.start(tmp_path_factory.mktemp("tokens") / "data", nodes=1)
    b.create_namespace(NS)
    b.kubectl("create", "serviceaccount", "reader", "-n", NS)
    b.kubectl("create", "role", "pod-reader", "-n", NS, "--verb=get,list,watch",
              "--resource=pods")
    b.kubectl("create", "rolebinding", "reader-pods", "-n", NS, "--role=pod-reader",
              f"--serviceaccount={NS}:reader")
    yield b
    b.stop()


def token_kubectl(b, token, *args, check=True):
    """kubectl with a kubeconfig holding only `token` (the cluster's CA and URL)."""
    kc = b.data_dir / f"token-{abs(hash(token)) % 10**8}.kubeconfig"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "berth", "cluster": {
            "server": b.url, "certificate-authority": b.ca_file()}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "berth", "user": "sa",
                                                "namespace": NS}}],
    }))
    r = subprocess.run(["kubectl", "--kubeconfig", str(kc), "--cache-dir", b.cache_dir + "-sa",
                        *map(str, args)], capture_output=True, text=True,
                       timeout=KUBECTL_TIMEOUT)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {args} exited {r.returncode}: {r.stderr}")
    return r


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def review(b, token):
    r = b.kubectl("create", "-f", "-", "-o", "json", stdin={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token}})
    return json.loads(r.stdout)["status"]


def test_the_signing_key_is_the_owners_only(b):
    assert stat.S_IMODE((b.data_dir / "sa.key").stat().st_mode) == 0o600


def test_a_token_in_a_kubeconfig_gets_what_its_role_allows(b):
    token = b.kubectl("create", "token", "reader", "-n", NS).stdout.strip()
    c = claims(token)
    assert c["iss"] == "https://kubernetes.default.svc.cluster.local"
    assert c["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    assert c["sub"] == f"system:serviceaccount:{NS}:reader"
    assert c["exp"] - c["iat"] == 3600
    assert c["kubernetes.io"]["namespace"] == NS
    assert c["kubernetes.io"]["serviceaccount"]["name"] == "reader"
    me = json.loads(token_kubectl(b, token, "auth", "whoami", "-o", "json").stdout)
    info = me["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:{NS}:reader"
    assert set(info["groups"]) == {"system:serviceaccounts", f"system:serviceaccounts:{NS}",
                                   "system:authenticated"}
    assert info["extra"]["authentication.kubernetes.io/credential-id"] == [f"JTI={c['jti']}"]
    assert token_kubectl(b, token, "get", "pods").returncode == 0
    denied = token_kubectl(b, token, "get", "secrets", check=False)
    assert denied.returncode != 0
    assert (f'User "system:serviceaccount:{NS}:reader" cannot list resource "secrets" '
            f'in API group "" in the namespace "{NS}"') in denied.stderr
    assert token_kubectl(b, token, "auth", "can-i", "delete", "pods",
                         check=False).stdout.strip() == "no"


def test_audience_duration_and_refusals(b):
    token = b.kubectl("create", "token", "reader", "-n", NS, "--audience", "vault",
                      "--duration", "20m").stdout.strip()
    c = claims(token)
    assert c["aud"] == ["vault"] and c["exp"] - c["iat"] == 1200
    # Not for this server's audience: 401.
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token=token)[0] == 401
    assert review(b, token)["authenticated"] is False
    short = b.kubectl("create", "token", "reader", "-n", NS, "--duration", "5m", check=False)
    assert short.returncode != 0
    assert "may not specify a duration less than 10 minutes" in short.stderr
    missing = b.kubectl("create", "token", "nobody", "-n", NS, check=False)
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token="a.b.c")[0] == 401


def test_only_users_allowed_to_create_tokens_may(b):
    token = b.kubectl("create", "token", "reader", "-n", NS).stdout.strip()
    r = token_kubectl(b, token, "create", "token", "reader", check=False)
    assert r.returncode != 0
    assert 'cannot create resource "serviceaccounts/token"' in r.stderr


def test_token_review_answers_for_a_service_account_token(b):
    token = b.kubectl("create", "token", "reader", "-n", NS).stdout.strip()
    status = review(b, token)
    assert status["authenticated"] is True
    assert status["user"]["username"] == f"system:serviceaccount:{NS}:reader"
    assert status["user"]["uid"] == b.kubectl(
        "get", "sa", "reader", "-n", NS, "-o", "jsonpath={.metadata.uid}").stdout


def test_token_review_answers_the_audiences_asked_for_that_the_token_has(b):
    """As upstream: status.audiences is the intersection of spec.audiences (the API server's
    when none are given) and the token's; a token with none of them is not authenticated."""
    api = "https://kubernetes.default.svc.cluster.local"
    token = b.kubectl("create", "token", "reader", "-n", NS, "--audience", "vault",
                      "--audience", api).stdout.strip()

    def review_for(*audiences, token=token):
        r = b.kubectl("create", "-f", "-", "-o", "json", stdin={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token, "audiences": list(audiences)}})
        return json.loads(r.stdout)["status"]

    assert review_for()["audiences"] == [api]
    status = review_for("vault", "other")
    assert status["authenticated"] is True and status["audiences"] == ["vault"]
    assert review_for("other")["authenticated"] is False
    # A token that names no audience (the admin's) is valid for the API server's.
    admin = (b.data_dir / "token").read_text().strip()
    assert review_for(token=admin)["audiences"] == [api]
    assert review_for("vault", token=admin)["authenticated"] is False


def test_a_deleted_account_or_bound_pod_ends_its_tokens(b):
    b.kubectl("create", "serviceaccount", "temp", "-n", NS)
    b.kubectl("create", "-f", "-", stdin=pod("holder", NS, node="node-1",
                                             serviceAccountName="temp"))
    bound = b.kubectl("create", "token", "temp", "-n", NS, "--bound-object-kind", "Pod",
                      "--bound-object-name", "holder").stdout.strip()
    c = claims(bound)
    assert c["kubernetes.io"]["pod"]["name"] == "holder"
    status = review(b, bound)
    assert status["authenticated"] is True
    assert status["user"]["extra"]["authentication.kubernetes.io/pod-name"] == ["holder"]
    other = b.kubectl("create", "token", "reader", "-n", NS, "--bound-object-kind", "Pod",
                      "--bound-object-name", "holder", check=False)
    assert ('cannot bind token for serviceaccount "reader" to pod running with different '
            'serviceaccount name.') in other.stderr
    unbound = b.kubectl("create", "token", "temp", "-n", NS).stdout.strip()
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token=unbound)[0] == 403
    b.kubectl("delete", "pod", "holder", "-n", NS, "--grace-period=0", "--force")
    eventually(lambda: review(b, bound)["authenticated"] is False, what="bound token refused")
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token=unbound)[0] == 403
    b.kubectl("delete", "serviceaccount", "temp", "-n", NS)
    code, body = http(b, f"/api/v1/namespaces/{NS}/pods", token=unbound)
    assert code == 401 and body["reason"] == "Unauthorized"


def test_a_kubelets_hour_long_pod_token_is_signed_for_a_year(b):
    """kube-apiserver's --service-account-extend-token-expiration (on by default): a pod-bound
    request for 3607 seconds, what kubelets ask for, gets a token valid for a year that turns
    stale after the hour; any other duration gets what it asked for."""
    b.kubectl("create", "serviceaccount", "kubelet-like", "-n", NS)
    b.kubectl("create", "-f", "-", stdin=pod("extended", NS, node="node-1",
                                             serviceAccountName="kubelet-like"))

    def bound_token(duration):
        return claims(b.kubectl("create", "token", "kubelet-like", "-n", NS,
                                "--bound-object-kind", "Pod", "--bound-object-name", "extended",
                                "--duration", duration).stdout.strip())

    c = bound_token("3607s")
    assert c["exp"] - c["iat"] == 365 * 24 * 3600, c
    assert c["kubernetes.io"]["warnafter"] - c["iat"] == 3607, c
    c = bound_token("3600s")
    assert c["exp"] - c["iat"] == 3600 and "warnafter" not in c["kubernetes.io"], c
    # Not bound to a pod: not extended.
    c = claims(b.kubectl("create", "token", "kubelet-like", "-n", NS, "--duration", "3607s")
               .stdout.strip())
    assert c["exp"] - c["iat"] == 3607 and "warnafter" not in c["kubernetes.io"], c
    # The TokenRequest's status gives the hour asked for, so a kubelet refreshes as usual.
    r = b.kubectl("create", "--raw",
                  f"/api/v1/namespaces/{NS}/serviceaccounts/kubelet-like/token", "-f", "-",
                  stdin=json.dumps({
                      "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {"expirationSeconds": 3607, "boundObjectRef": {
                          "kind": "Pod", "apiVersion": "v1", "name": "extended"}}}))
    status = json.loads(r.stdout)["status"]
    c = claims(status["token"])
    assert c["exp"] - c["iat"] == 365 * 24 * 3600
    from datetime import datetime
    expires = datetime.fromisoformat(status["expirationTimestamp"].replace("Z", "+00:00"))
    assert int(expires.timestamp()) - c["iat"] == 3607
    # Its use is counted as a valid (not yet stale) extended token.
    # Its use (authenticated, then refused by RBAC) counts as a valid, not yet stale, one.
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token=status["token"])[0] == 403
    metrics = b.kubectl("get", "--raw", "/metrics").stdout
    assert "serviceaccount_stale_tokens_total 0" in metrics
    valid = [line for line in metrics.splitlines()
             if line.startswith("serviceaccount_valid_tokens_total ")]
    assert valid and int(float(valid[0].split()[1])) >= 1, valid


def test_a_legacy_token_secret_is_filled_and_authenticates(b):
    b.kubectl("create", "-f", "-", stdin={
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "reader-token", "namespace": NS,
                     "annotations": {"kubernetes.io/service-account.name": "reader"}}})

    def filled():
        s = b.kubectl_json("get", "secret", "reader-token", "-n", NS)
        return s if "token" in (s.get("data") or {}) else None

    s = eventually(filled, what="token secret filled")
    data = {k: base64.b64decode(v).decode() for k, v in s["data"].items()}
    assert data["namespace"] == NS
    assert data["ca.crt"] == (b.data_dir / "ca.crt").read_text()
    assert s["metadata"]["annotations"]["kubernetes.io/service-account.uid"] == b.kubectl(
        "get", "sa", "reader", "-n", NS, "-o", "jsonpath={.metadata.uid}").stdout
    token = data["token"]
    assert claims(token)["iss"] == "kubernetes/serviceaccount"
    assert "pod" not in token_kubectl(b, token, "get", "pods", "-o", "name").stderr
    me = json.loads(token_kubectl(b, token, "auth", "whoami", "-o", "json").stdout)
    assert me["status"]["userInfo"]["username"] == f"system:serviceaccount:{NS}:reader"
    b.kubectl("delete", "secret", "reader-token", "-n", NS)
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token=token)[0] == 401


def test_tokens_outlive_a_restart(b):
    token = b.kubectl("create", "token", "reader", "-n", NS).stdout.strip()
    key = (b.data_dir / "sa.key").read_text()
    b.stop()
    b.launch()
    assert (b.data_dir / "sa.key").read_text() == key
    assert http(b, f"/api/v1/namespaces/{NS}/pods", token=token)[0] == 200

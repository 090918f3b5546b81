"""CertificateSigningRequests signed by the cluster CA (issue 37): a request for
`kubernetes.io/kube-apiserver-client` made with a key of the test's own, approved with
`kubectl certificate approve`, gets its certificate, and the certificate authenticates its
subject (CN = user, O = group, every O of several) to the server; a request its signer
refuses gets the `Failed` condition in upstream's words.
"""

import base64
import datetime
import json
import subprocess

import pytest

from conftest import BERTH_BIN, eventually

crypto = pytest.importorskip("cryptography")
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def make_request(cn, org, *more_orgs, one_rdn=False):
    """A request for CN=cn with O=org (and each of `more_orgs`): one RDN per attribute as
    openssl writes them, or with `one_rdn` every O in one multi-valued RDN as Go writes them."""
    key = ec.generate_private_key(ec.SECP256R1())
    orgs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in (org, *more_orgs)]
    common_name = x509.NameAttribute(NameOID.COMMON_NAME, cn)
    if one_rdn:
        name = x509.Name([x509.RelativeDistinguishedName(orgs),
                          x509.RelativeDistinguishedName([common_name])])
    else:
        name = x509.Name([common_name, *orgs])
    csr = (x509.CertificateSigningRequestBuilder().subject_name(name)
           .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return csr.public_bytes(serialization.Encoding.PEM), key_pem


def csr_object(name, request_pem, usages, expiration=None):
    spec = {"request": base64.b64encode(request_pem).decode(),
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": usages}
    if expiration:
        spec["expirationSeconds"] = expiration
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name}, "spec": spec}


def test_an_approved_request_becomes_a_client_certificate_of_the_server(berth, tmp_path):
    request_pem, key_pem = make_request("csr-bob", "csr-qa")
    berth.kubectl("apply", "-f", "-", stdin=[csr_object("csr-bob", request_pem, ["client auth"],
                                                        expiration=3600)])
    # Not approved: nothing is signed.
    assert not berth.kubectl_json("get", "csr", "csr-bob").get("status", {}).get("certificate")
    berth.kubectl("certificate", "approve", "csr-bob")

    def certificate():
        return berth.kubectl_json("get", "csr", "csr-bob").get("status", {}).get("certificate")

    cert_pem = base64.b64decode(eventually(certificate, what="certificate issued"))
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "csr-bob"
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime == datetime.timedelta(seconds=3600 + 300)
    ca = x509.load_pem_x509_certificate((berth.data_dir / "ca.crt").read_bytes())
    assert cert.issuer == ca.subject

    (tmp_path / "bob.crt").write_bytes(cert_pem)
    (tmp_path / "bob.key").write_bytes(key_pem)
    r = subprocess.run(
        ["kubectl", "--kubeconfig", "/dev/null", "--server", berth.url,
         "--certificate-authority", str(berth.data_dir / "ca.crt"),
         "--client-certificate", str(tmp_path / "bob.crt"),
         "--client-key", str(tmp_path / "bob.key"), "auth", "whoami", "-o", "json"],
        capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    user = json.loads(r.stdout)["status"]["userInfo"]
    assert user["username"] == "csr-bob"
    assert "csr-qa" in user["groups"]


def whoami(berth, tmp_path, cert_pem, key_pem):
    (tmp_path / "user.crt").write_bytes(cert_pem)
    (tmp_path / "user.key").write_bytes(key_pem)
    r = subprocess.run(
        ["kubectl", "--kubeconfig", "/dev/null", "--server", berth.url,
         "--certificate-authority", str(berth.data_dir / "ca.crt"),
         "--client-certificate", str(tmp_path / "user.crt"),
         "--client-key", str(tmp_path / "user.key"), "auth", "whoami", "-o", "json"],
        capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["status"]["userInfo"]


@pytest.mark.parametrize("one_rdn", [False, True], ids=["rdn-per-o", "multi-valued-rdn"])
def test_a_certificate_keeps_every_organization_of_the_request(berth, tmp_path, one_rdn):
    name = f"csr-dana-{int(one_rdn)}"
    request_pem, key_pem = make_request(name, "csr-devs", "csr-ops", one_rdn=one_rdn)
    berth.kubectl("apply", "-f", "-", stdin=[csr_object(name, request_pem, ["client auth"])])
    berth.kubectl("certificate", "approve", name)
    cert_pem = base64.b64decode(eventually(
        lambda: berth.kubectl_json("get", "csr", name).get("status", {}).get("certificate"),
        what="certificate issued"))
    cert = x509.load_pem_x509_certificate(cert_pem)
    orgs = sorted(a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    assert orgs == ["csr-devs", "csr-ops"]
    user = whoami(berth, tmp_path, cert_pem, key_pem)
    assert user["username"] == name
    assert {"csr-devs", "csr-ops", "system:authenticated"} <= set(user["groups"])


def test_a_request_for_server_auth_from_the_client_signer_fails(berth):
    request_pem, _ = make_request("csr-eve", "csr-qa")
    berth.kubectl("apply", "-f", "-", stdin=[csr_object("csr-eve", request_pem, ["server auth"])])
    berth.kubectl("certificate", "approve", "csr-eve")

    def failed():
        cs = berth.kubectl_json("get", "csr", "csr-eve").get("status", {}).get("conditions") or []
        return next((c for c in cs if c["type"] == "Failed"), None)

    c = eventually(failed, what="Failed condition")
    assert (c["status"], c["reason"]) == ("True", "SignerValidationFailure")
    assert c["message"] == "invalid usage for client certificate: server auth"
    assert not berth.kubectl_json("get", "csr", "csr-eve")["status"].get("certificate")
    table = berth.kubectl("get", "csr", "csr-eve").stdout
    assert "Approved,Failed" in table, table


def test_berth_controllers_signs_as_its_own_service_account(berth_factory, tmp_path):
    """`berth controllers --use-service-account-credentials` with the cluster CA's files: the
    signer runs as `kube-system:certificate-controller`, with a token of its own."""
    server = berth_factory(args=["--controllers=*,-certificatesigningrequest-signing-controller"])
    request_pem, _ = make_request("csr-carol", "csr-qa")
    server.kubectl("apply", "-f", "-", stdin=[csr_object("csr-carol", request_pem,
                                                         ["client auth"])])
    server.kubectl("certificate", "approve", "csr-carol")
    log = open(tmp_path / "controllers.log", "wb")
    proc = subprocess.Popen(
        [str(BERTH_BIN), "controllers", "--kubeconfig", str(server.kubeconfig), "--leader-elect=false",
         "--use-service-account-credentials",
         "--controllers=certificatesigningrequest-signing-controller",
         "--cluster-signing-cert-file", str(server.data_dir / "ca.crt"),
         "--cluster-signing-key-file", str(server.data_dir / "ca.key")],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        eventually(lambda: server.kubectl_json("get", "csr", "csr-carol")
                   .get("status", {}).get("certificate"), timeout=90,
                   what="berth controllers to sign")
        sa = server.kubectl_json("get", "serviceaccount", "certificate-controller",
                                 "-n", "kube-system")
        assert sa["metadata"]["name"] == "certificate-controller"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()

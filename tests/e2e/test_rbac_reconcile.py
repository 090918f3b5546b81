"""The bootstrap roles and bindings are reconciled at every start, as upstream's
`rbac/bootstrap-roles` hook: what a user removed from an `autoupdate: "true"` object comes back,
what they added stays, and an object annotated `autoupdate: "false"` keeps their edit."""

import json
import subprocess

from conftest import BERTH_BIN

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
USER_RULE = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}


def grants(rules, group, resource, verb):
    return any(
        group in r.get("apiGroups", []) and resource in r.get("resources", [])
        and verb in r.get("verbs", [])
        for r in rules
    )


def whoami(b, kubeconfig):
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", b.cache_dir + "-u",
         "auth", "whoami", "-o", "json"], capture_output=True, text=True, timeout=60)


def user_kubeconfig(data, path):
    """A kubeconfig for alice pointing at the running server (a restart changes the port)."""
    subprocess.run([str(BERTH_BIN), "kubeconfig", "--user", "alice", "--group", "dev",
                    "--data-dir", str(data), "-o", str(path)],
                   check=True, capture_output=True, text=True)


def patch(b, kind, name, body):
    b.kubectl("patch", kind, name, "--type=merge", "-p", json.dumps(body))


def test_restart_restores_bootstrap_rbac_and_keeps_user_edits(berth_factory, tmp_path):
    data = tmp_path / "data"
    b = berth_factory(data, nodes=1)
    alice = tmp_path / "alice.kubeconfig"
    user_kubeconfig(data, alice)
    assert whoami(b, alice).returncode == 0

    # system:basic-user loses the rule that lets a user ask who they are, and gains one of the
    # user's; its binding loses a subject and gains one.
    basic = b.kubectl_json("get", "clusterrole", "system:basic-user")
    assert basic["metadata"]["annotations"][AUTOUPDATE] == "true"
    kept = [r for r in basic["rules"] if "selfsubjectreviews" not in r.get("resources", [])]
    patch(b, "clusterrole", "system:basic-user", {"rules": kept + [USER_RULE]})
    assert whoami(b, alice).returncode != 0
    carol = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}
    patch(b, "clusterrolebinding", "system:public-info-viewer", {"subjects": [carol]})
    # system:discovery opts out of reconciliation and loses a URL.
    discovery = b.kubectl_json("get", "clusterrole", "system:discovery")
    urls = [u for u in discovery["rules"][0]["nonResourceURLs"] if u != "/version"]
    patch(b, "clusterrole", "system:discovery", {
        "metadata": {"annotations": {AUTOUPDATE: "false"}},
        "rules": [{"nonResourceURLs": urls, "verbs": discovery["rules"][0]["verbs"]}]})

    b.stop()
    b = berth_factory(data, nodes=1)
    user_kubeconfig(data, alice)

    basic = b.kubectl_json("get", "clusterrole", "system:basic-user")
    assert grants(basic["rules"], "authentication.k8s.io", "selfsubjectreviews", "create")
    assert USER_RULE in basic["rules"]
    assert whoami(b, alice).returncode == 0
    subjects = b.kubectl_json("get", "clusterrolebinding", "system:public-info-viewer")["subjects"]
    names = [s["name"] for s in subjects]
    assert names == ["carol", "system:authenticated", "system:unauthenticated"]
    discovery = b.kubectl_json("get", "clusterrole", "system:discovery")
    assert discovery["metadata"]["annotations"][AUTOUPDATE] == "false"
    assert "/version" not in discovery["rules"][0]["nonResourceURLs"]
    assert "/api" in discovery["rules"][0]["nonResourceURLs"]

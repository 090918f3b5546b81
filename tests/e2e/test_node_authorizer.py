"""Kubelets as nodes: what a node (`system:node:NAME` in `system:nodes`) may do, as kubectl
shows it when the admin impersonates one. The Node authorizer lets a node get its own Node and
the pods bound to it, and the Secrets its pods mount, and nothing else of the kind, in
upstream's words; NodeRestriction keeps it off other nodes and off the labels it may not set.
berth's own simulated kubelets write the same way, so their pods keep running."""

import json

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from conftest import eventually, pod

NODE = "node-1"
OTHER = "node-2"


def as_node(b, node, *args, check=True):
    return b.kubectl("--as", f"system:node:{node}", "--as-group", "system:nodes",
                     *args, check=check)


def node_api(b, node):
    """The Python client as the admin impersonating `node`'s kubelet."""
    api = k8s_config.new_client_from_config(config_file=str(b.kubeconfig))
    api.set_default_header("Impersonate-User", f"system:node:{node}")
    api.set_default_header("Impersonate-Group", "system:nodes")
    return k8s.CoreV1Api(api)


def forbidden(r):
    assert r.returncode != 0, r.stdout
    return r.stderr.strip()


def test_a_node_reads_its_own_node_and_pods_and_what_they_mount(berth, ns):
    berth.kubectl("create", "secret", "generic", "mounted", "-n", ns, "--from-literal=k=v")
    berth.kubectl("create", "secret", "generic", "unmounted", "-n", ns, "--from-literal=k=v")
    mine = pod("mine", ns, node=NODE,
               volumes=[{"name": "s", "secret": {"secretName": "mounted"}}])
    theirs = pod("theirs", ns, node=OTHER)
    berth.kubectl("create", "-f", "-", stdin=[mine, theirs])

    got = as_node(berth, NODE, "get", "node", NODE, "-o", "name")
    assert got.stdout.strip() == f"node/{NODE}"
    # berth's own kubelet (writing as the node) runs the pod.
    eventually(lambda: as_node(berth, NODE, "get", "pod", "mine", "-n", ns,
                               "-o", "jsonpath={.status.phase}").stdout == "Running",
               what="the node's pod running")

    assert forbidden(as_node(berth, NODE, "get", "pod", "theirs", "-n", ns, check=False)) == (
        f'Error from server (Forbidden): pods "theirs" is forbidden: User '
        f'"system:node:{NODE}" cannot get resource "pods" in API group "" in the namespace '
        f'"{ns}": no relationship found between node \'{NODE}\' and this object')
    assert forbidden(as_node(berth, NODE, "get", "secret", "unmounted", "-n", ns,
                             check=False)) == (
        f'Error from server (Forbidden): secrets "unmounted" is forbidden: User '
        f'"system:node:{NODE}" cannot get resource "secrets" in API group "" in the namespace '
        f'"{ns}": no relationship found between node \'{NODE}\' and this object')
    got = as_node(berth, NODE, "get", "secret", "mounted", "-n", ns, "-o", "name")
    assert got.stdout.strip() == "secret/mounted"

    assert forbidden(as_node(berth, NODE, "get", "node", OTHER, check=False)) == (
        f'Error from server (Forbidden): nodes "{OTHER}" is forbidden: User '
        f'"system:node:{NODE}" cannot get resource "nodes" in API group "" at the cluster '
        f'scope: node \'{NODE}\' cannot read \'{OTHER}\', only its own Node object')
    # The node's pods are gone from its reach once deleted.
    berth.kubectl("delete", "pod", "mine", "-n", ns, "--grace-period=0", "--force")
    eventually(lambda: as_node(berth, NODE, "get", "secret", "mounted", "-n", ns,
                               check=False).returncode != 0,
               what="the secret out of reach once its pod is gone")


def test_node_restriction_keeps_a_node_to_its_own_node_and_allowed_labels(berth):
    # kubectl would first get the other node, which the Node authorizer refuses; a patch
    # sent straight is refused by NodeRestriction.
    with pytest.raises(k8s.ApiException) as refused:
        node_api(berth, NODE).patch_node(OTHER, {"metadata": {"labels": {"e2e": "x"}}})
    assert refused.value.status == 403
    assert json.loads(refused.value.body)["message"] == (
        f'nodes "{OTHER}" is forbidden: node "{NODE}" is not allowed to modify node "{OTHER}"')
    r = as_node(berth, NODE, "label", "node", NODE, "node-restriction.kubernetes.io/x=y",
                check=False)
    assert forbidden(r) == (
        f'Error from server (Forbidden): nodes "{NODE}" is forbidden: '
        'is not allowed to modify labels: node-restriction.kubernetes.io/x')
    # A label of its own it may set; the admin may set the restricted one.
    as_node(berth, NODE, "label", "node", NODE, "e2e-node-label=yes")
    berth.kubectl("label", "node", NODE, "node-restriction.kubernetes.io/x=y")
    labels = berth.kubectl_json("get", "node", NODE)["metadata"]["labels"]
    assert labels["e2e-node-label"] == "yes"
    assert labels["node-restriction.kubernetes.io/x"] == "y"
    berth.kubectl("label", "node", NODE, "node-restriction.kubernetes.io/x-", "e2e-node-label-")


def test_the_simulated_kubelets_write_without_a_denial(berth):
    # Leases, node status and pod status went through the nodes' own identities above; a
    # missing rule would show as a denial in the server's log (the access log's `resp=403`
    # at info level, the component's warning otherwise; a bare "403" also matches timestamps).
    log = berth.log_path.read_text()
    denied = [line for line in log.splitlines()
              if "system:node:" in line and ("resp=403" in line or "forbidden" in line.lower())]
    assert denied == []
    lease = berth.kubectl_json("get", "lease", NODE, "-n", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == NODE


# Runs after the check above: the refusals it provokes are deliberate.
def test_a_node_lists_its_pods_gets_its_volumes_and_tokens_of_its_own_pods(berth, ns):
    berth.kubectl("create", "-f", "-", stdin=[
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{ns}-pv"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                  "hostPath": {"path": "/tmp/pv"}, "storageClassName": "manual"}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{ns}-other"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                  "hostPath": {"path": "/tmp/other"}, "storageClassName": "manual"}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "data", "namespace": ns},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                  "volumeName": f"{ns}-pv", "resources": {"requests": {"storage": "1Gi"}}}},
        pod("mine", ns, node=NODE,
            volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
        pod("theirs", ns, node=OTHER),
    ])
    user = f'User "system:node:{NODE}"'

    # Pods: listed with its own spec.nodeName field selector, as a kubelet lists them.
    mine = as_node(berth, NODE, "get", "pods", "-A", "--field-selector",
                   f"spec.nodeName={NODE}", "-o", "jsonpath={.items[*].metadata.name}")
    assert "mine" in mine.stdout.split() and "theirs" not in mine.stdout.split()
    assert forbidden(as_node(berth, NODE, "get", "pods", "-A", check=False)) == (
        f'Error from server (Forbidden): pods is forbidden: {user} cannot list resource "pods" '
        'in API group "" at the cluster scope: can only list/watch pods with spec.nodeName '
        'field selector')
    assert forbidden(as_node(berth, NODE, "get", "pods", "-A", "--field-selector",
                             f"spec.nodeName={OTHER}", check=False)).startswith(
        f'Error from server (Forbidden): pods is forbidden: {user} cannot list')

    # PersistentVolumes: the one its pod's claim is bound to, no other.
    eventually(lambda: as_node(berth, NODE, "get", "pv", f"{ns}-pv", "-o", "name",
                               check=False).stdout.strip() == f"persistentvolume/{ns}-pv",
               what="the bound volume in the node's reach")
    assert forbidden(as_node(berth, NODE, "get", "pv", f"{ns}-other", check=False)) == (
        f'Error from server (Forbidden): persistentvolumes "{ns}-other" is forbidden: {user} '
        'cannot get resource "persistentvolumes" in API group "" at the cluster scope: '
        f"no relationship found between node '{NODE}' and this object")

    # A pod itself (not its status) is not the node's to change.
    r = as_node(berth, NODE, "label", "pod", "mine", "-n", ns, "e2e=x", check=False)
    assert f'{user} cannot patch resource "pods" in API group ""' in forbidden(r)

    # Tokens: only bound to a pod of its own, named by uid (NodeRestriction).
    def token(pod_name, *extra):
        uid = berth.kubectl_json("get", "pod", pod_name, "-n", ns)["metadata"]["uid"]
        return as_node(berth, NODE, "create", "token", "default", "-n", ns,
                       "--bound-object-kind", "Pod", "--bound-object-name", pod_name,
                       "--bound-object-uid", uid, *extra, check=False)

    assert eventually(lambda: token("mine").returncode == 0, what="a token for its pod")
    assert forbidden(token("theirs")) == (
        'error: failed to create token: serviceaccounts "default" is forbidden: node '
        'requested token bound to a pod scheduled on a different node')
    assert forbidden(as_node(berth, NODE, "create", "token", "default", "-n", ns,
                             check=False)) == (
        'error: failed to create token: serviceaccounts "default" is forbidden: node '
        'requested token not bound to a pod')

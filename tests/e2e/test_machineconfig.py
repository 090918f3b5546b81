"""Machine config pools and KubeletConfig (issue 33, item 2): seed 004's allocatable procedure
and seed 001's eviction settings, as OpenShift's Machine Config Operator applies them.

Each test runs a server of its own (the worker pool's kubelets are reconfigured) and drives it
with kubectl; each step names the `oc` command it stands for (the same API calls).
"""

import json

from conftest import eventually

# Seed 004's "Sample configuration for a resource allocation CR".
SEED_004_KUBELET_CONFIG = """
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: set-allocatable
spec:
  machineConfigPoolSelector:
    matchLabels:
      custom-kubelet: small-pods
  kubeletConfig:
    systemReserved:
      cpu: 500m
      memory: 512Mi
    kubeReserved:
      cpu: 500m
      memory: 512Mi
"""

# Seed 001's example scenario (evict at 95% memory at once, at 90% after 30s; reserve the
# hard threshold with the system), as a KubeletConfig of the same pool.
SEED_001_KUBELET_CONFIG = """
apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: set-allocatable
spec:
  machineConfigPoolSelector:
    matchLabels:
      custom-kubelet: small-pods
  kubeletConfig:
    evictionHard:
      memory.available: 500Mi
    evictionSoft:
      memory.available: 10%
    evictionSoftGracePeriod:
      memory.available: 30s
    evictionPressureTransitionPeriod: 1m
    systemReserved:
      memory: 1.5Gi
"""


def condition(obj, kind):
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == kind:
            return c
    return {}


def pool_updated(berth, name, config_prefix=None):
    """The pool once it reports Updated with every machine updated."""
    def check():
        pool = berth.kubectl_json("get", "mcp", name)
        status = pool.get("status", {})
        config = status.get("configuration", {}).get("name", "")
        done = (condition(pool, "Updated").get("status") == "True"
                and status.get("updatedMachineCount") == status.get("machineCount")
                and config == pool["spec"].get("configuration", {}).get("name"))
        if config_prefix is not None and not config.startswith(config_prefix):
            return None
        return pool if done else None
    return eventually(check, what=f"pool {name} Updated")


def allocatable(berth, node):
    return berth.kubectl_json("get", "node", node)["status"]["allocatable"]


def test_pools_master_and_worker_exist_and_select_the_nodes_by_role(berth_factory):
    """`oc get machineconfigpool`, `oc describe machineconfigpool worker`, `oc get mc`."""
    berth = berth_factory(nodes=3)
    pool = pool_updated(berth, "worker")
    assert pool["spec"]["nodeSelector"] == {"matchLabels": {"node-role.kubernetes.io/worker": ""}}
    assert pool["spec"]["machineConfigSelector"] == {
        "matchLabels": {"machineconfiguration.openshift.io/role": "worker"}}
    assert pool["status"]["machineCount"] == 3
    assert pool["status"]["readyMachineCount"] == 3
    assert pool["status"]["configuration"]["name"].startswith("rendered-worker-")
    master = pool_updated(berth, "master")
    assert master["status"]["machineCount"] == 0

    table = berth.kubectl("get", "machineconfigpool").stdout
    header = table.splitlines()[0].split()
    assert header == ["NAME", "CONFIG", "UPDATED", "UPDATING", "DEGRADED", "MACHINECOUNT",
                      "READYMACHINECOUNT", "UPDATEDMACHINECOUNT", "DEGRADEDMACHINECOUNT", "AGE"]
    worker_row = next(line.split() for line in table.splitlines() if line.startswith("worker"))
    assert worker_row[2:9] == ["True", "False", "False", "3", "3", "3", "0"]
    described = berth.kubectl("describe", "machineconfigpool", "worker").stdout
    assert "Machine Config Selector" in described and "All nodes are updated with" in described

    names = berth.kubectl("get", "mc", "-o", "name").stdout.split()
    assert "machineconfig.machineconfiguration.openshift.io/00-worker" in names
    assert any(n.split("/")[1].startswith("rendered-worker-") for n in names)
    node = berth.kubectl_json("get", "node", "node-1")
    annotations = node["metadata"]["annotations"]
    config = pool["status"]["configuration"]["name"]
    assert annotations["machineconfiguration.openshift.io/currentConfig"] == config
    assert annotations["machineconfiguration.openshift.io/desiredConfig"] == config
    assert annotations["machineconfiguration.openshift.io/state"] == "Done"


def test_seed_004_kubelet_config_sets_the_workers_allocatable(berth_factory):
    """Seed 004: `oc label machineconfigpool worker custom-kubelet=small-pods`, `oc create -f`
    the seed's KubeletConfig, `oc get machineconfigpool` (Updating, then Updated),
    `oc describe node` (the new Allocatable); then seed 001's eviction settings through the
    same KubeletConfig (`oc replace -f`) and `oc get --raw /api/v1/nodes/N/proxy/configz`."""
    berth = berth_factory(nodes=3)
    before = pool_updated(berth, "worker")
    base_config = before["status"]["configuration"]["name"]
    assert allocatable(berth, "node-1")["memory"] == "16284Mi"

    berth.kubectl("label", "machineconfigpool", "worker", "custom-kubelet=small-pods")
    assert berth.kubectl_json("get", "mcp", "worker")["metadata"]["labels"]["custom-kubelet"] == \
        "small-pods"
    berth.kubectl("create", "-f", "-", stdin=SEED_004_KUBELET_CONFIG)

    # The controller renders 99-worker-generated-kubelet into a new configuration of the pool.
    def success():
        kc = berth.kubectl_json("get", "kubeletconfig", "set-allocatable")
        c = condition(kc, "Success")
        return kc if c.get("status") == "True" else None
    kc = eventually(success, what="the KubeletConfig's Success condition")
    assert kc["status"]["conditions"][-1]["message"] == "Success"
    generated = berth.kubectl_json("get", "mc", "99-worker-generated-kubelet")
    assert generated["metadata"]["labels"]["machineconfiguration.openshift.io/role"] == "worker"
    assert generated["metadata"]["ownerReferences"][0]["name"] == "set-allocatable"

    pool = pool_updated(berth, "worker", config_prefix="rendered-worker-")
    pool = eventually(lambda: (lambda p: p if p["status"]["configuration"]["name"] != base_config
                               else None)(pool_updated(berth, "worker")),
                      what="the worker pool on its new configuration")
    sources = [s["name"] for s in pool["spec"]["configuration"]["source"]]
    assert "99-worker-generated-kubelet" in sources
    assert pool["status"]["updatedMachineCount"] == 3
    assert pool["status"]["degradedMachineCount"] == 0

    # Capacity less 1 CPU and 1Gi reserved and memory.available<100Mi: seed 004's figures.
    for node in ("node-1", "node-2", "node-3"):
        a = allocatable(berth, node)
        assert a["cpu"] == "3" and a["memory"] == "15260Mi", (node, a)
        annotations = berth.kubectl_json("get", "node", node)["metadata"]["annotations"]
        assert annotations["machineconfiguration.openshift.io/currentConfig"] == \
            pool["status"]["configuration"]["name"]
    described = berth.kubectl("describe", "node", "node-2").stdout
    allocatable_section = described.split("Allocatable:")[1].split("System Info:")[0]
    assert "15260Mi" in allocatable_section

    # Seed 001's eviction settings through the same KubeletConfig.
    third = pool["status"]["configuration"]["name"]
    berth.kubectl("replace", "-f", "-", stdin=SEED_001_KUBELET_CONFIG)
    eventually(lambda: (lambda p: p if p["status"]["configuration"]["name"] != third
                        else None)(pool_updated(berth, "worker")),
               what="the worker pool on seed 001's configuration")
    for node in ("node-1", "node-3"):
        # 16Gi less 1.5Gi system-reserved and the 500Mi hard threshold.
        assert allocatable(berth, node)["memory"] == "14348Mi"
    configz = json.loads(berth.kubectl("get", "--raw",
                                       "/api/v1/nodes/node-1/proxy/configz").stdout)
    kubelet = configz["kubeletconfig"]
    assert kubelet["evictionHard"] == {"memory.available": "500Mi"}
    assert kubelet["evictionSoft"] == {"memory.available": "10%"}
    assert kubelet["evictionSoftGracePeriod"] == {"memory.available": "30s"}
    assert kubelet["evictionPressureTransitionPeriod"] == "1m0s"
    assert kubelet["systemReserved"] == {"memory": "1.5Gi"}

    # `oc delete kubeletconfig set-allocatable`: the nodes go back to their own settings.
    berth.kubectl("delete", "kubeletconfig", "set-allocatable")
    eventually(lambda: pool_updated(berth, "worker")["status"]["configuration"]["name"]
               == base_config, what="the worker pool back on its base configuration")
    eventually(lambda: allocatable(berth, "node-2")["memory"] == "16284Mi",
               what="node-2's own allocatable back")


def test_a_kubelet_config_that_selects_no_pool_or_sets_a_forbidden_field_fails(berth_factory):
    """`oc create -f` of KubeletConfigs the operator refuses, then `oc get kubeletconfig -o yaml`
    shows the Failure condition in its words; the pools stay as they were."""
    berth = berth_factory(nodes=1)
    before = pool_updated(berth, "worker")["status"]["configuration"]["name"]
    # The seed's KubeletConfig before the pool is labelled: it selects no pool.
    berth.kubectl("create", "-f", "-", stdin=SEED_004_KUBELET_CONFIG)
    forbidden = SEED_004_KUBELET_CONFIG.replace("name: set-allocatable", "name: bad-domain") \
        .replace("    kubeReserved:", "    clusterDomain: example.org\n    kubeReserved:")
    berth.kubectl("create", "-f", "-", stdin=forbidden)

    def failure(name):
        def check():
            kc = berth.kubectl_json("get", "kubeletconfig", name)
            c = condition(kc, "Failure")
            return c if c.get("status") == "False" else None
        return eventually(check, what=f"{name}'s Failure condition")
    assert failure("set-allocatable")["message"] == \
        "Error: could not find any MachineConfigPool set for KubeletConfig set-allocatable"
    assert failure("bad-domain")["message"] == \
        "Error: KubeletConfiguration: clusterDomain is not allowed to be set, but contains: " \
        "example.org"
    assert berth.kubectl_json("get", "mcp", "worker")["status"]["configuration"]["name"] == before
    r = berth.kubectl("get", "mc", "99-worker-generated-kubelet", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr

    # Labelling the pool now makes the first one apply; the forbidden one still fails.
    berth.kubectl("label", "mcp", "worker", "custom-kubelet=small-pods")
    eventually(lambda: condition(berth.kubectl_json("get", "kubeletconfig", "set-allocatable"),
                                 "Success").get("status") == "True",
               what="set-allocatable applied once the pool is labelled")
    eventually(lambda: allocatable(berth, "node-1")["memory"] == "15260Mi",
               what="node-1's allocatable from seed 004")
    assert condition(berth.kubectl_json("get", "kubeletconfig", "bad-domain"),
                     "Failure").get("status") == "False"

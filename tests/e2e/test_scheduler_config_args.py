"""KubeSchedulerConfiguration plugin args the engine honours (`berth serve --scheduler-config`):
NodeResourcesFit's RequestedToCapacityRatio shape and weighted resources, its ignored extended
resources, NodeAffinity's addedAffinity, InterPodAffinity's ignorePreferredTermsOfExistingPods
and DefaultPreemption's candidate bounds. Placements are read with the Python client."""

import conftest  # noqa: F401  (the harness's fixtures)
from conftest import eventually
from scheduler_support import label_node, wait_bound
from test_scheduler_config import cpu_pod, create, write_config


def node_names(berth):
    return sorted(n.metadata.name for n in berth.core.list_node().items)


def placed(berth, ns, name):
    """spec.nodeName read through the Python client, once the pod is bound."""
    wait_bound(berth, ns, name)
    return berth.core.read_namespaced_pod(name, ns).spec.node_name


def pending_reason(berth, ns, name):
    def check():
        pod = berth.core.read_namespaced_pod(name, ns)
        for c in pod.status.conditions or []:
            if c.type == "PodScheduled" and c.reason == "Unschedulable":
                return c.message
        return None
    return eventually(check, what=f"{ns}/{name} to be reported unschedulable")


#: Bin packing by utilization: the fuller a node's cpu, the higher its score.
PACKING_SHAPE = {
    "schedulerName": "ratio",
    "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 10}]},
    }}}],
}


def test_requested_to_capacity_ratio_with_a_packing_shape_fills_one_node(
        berth_factory, tmp_path):
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}, PACKING_SHAPE])
    berth = berth_factory(args=("--scheduler-config", config))
    berth.create_namespace("ratio")
    for i in range(3):
        create(berth, cpu_pod(f"packed-{i}", "ratio", "ratio"))
        placed(berth, "ratio", f"packed-{i}")
    nodes = {placed(berth, "ratio", f"packed-{i}") for i in range(3)}
    assert len(nodes) == 1, nodes


def test_ignored_extended_resources_do_not_keep_a_pod_pending(berth_factory, tmp_path):
    ignoring = {
        "schedulerName": "ignoring",
        "pluginConfig": [{"name": "NodeResourcesFit", "args": {
            "ignoredResources": ["example.com/fpga"],
            "ignoredResourceGroups": ["gpu.example.org"],
        }}],
    }
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}, ignoring])
    berth = berth_factory(args=("--scheduler-config", config))
    berth.create_namespace("ext")

    def wanting(name, scheduler, resource):
        p = cpu_pod(name, "ext", scheduler)
        p["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "100m", resource: "1"}, "limits": {resource: "1"}}
        return p

    create(berth, wanting("by-name", "ignoring", "example.com/fpga"),
           wanting("by-group", "ignoring", "gpu.example.org/a100"),
           wanting("not-ignored", "ignoring", "example.com/other"),
           wanting("default", "default-scheduler", "example.com/fpga"))
    assert placed(berth, "ext", "by-name")
    assert placed(berth, "ext", "by-group")
    assert "Insufficient example.com/other" in pending_reason(berth, "ext", "not-ignored")
    assert "Insufficient example.com/fpga" in pending_reason(berth, "ext", "default")


def test_added_affinity_applies_to_every_pod_of_the_profile(berth_factory, tmp_path):
    pinned = {
        "schedulerName": "pinned",
        "pluginConfig": [{"name": "NodeAffinity", "args": {"addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In",
                                       "values": ["special"]}]}]},
        }}}],
    }
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}, pinned])
    berth = berth_factory(args=("--scheduler-config", config))
    special = node_names(berth)[1]
    label_node(berth, special, "pool=special")
    berth.create_namespace("added")
    for i in range(4):
        create(berth, cpu_pod(f"pinned-{i}", "added", "pinned"))
    assert {placed(berth, "added", f"pinned-{i}") for i in range(4)} == {special}
    # The pod's own selector is ANDed with the added affinity: nothing satisfies both.
    other = node_names(berth)[0]
    create(berth, cpu_pod("both", "added", "pinned",
                          nodeSelector={"kubernetes.io/hostname": other}))
    # Upstream's words: the added affinity is checked first, with its own reason.
    message = pending_reason(berth, "added", "both")
    assert "1 node(s) didn't match Pod's node affinity/selector" in message, message
    assert f"{len(node_names(berth)) - 1} node(s) didn't match scheduler-enforced node " \
        "affinity" in message, message
    # Pods of the other profile go anywhere.
    create(berth, cpu_pod("free", "added", "default-scheduler",
                          nodeSelector={"kubernetes.io/hostname": other}))
    assert placed(berth, "added", "free") == other


def test_ignoring_preferred_terms_of_existing_pods(berth_factory, tmp_path):
    ignoring = {
        "schedulerName": "ignoring",
        "pluginConfig": [{"name": "InterPodAffinity",
                          "args": {"ignorePreferredTermsOfExistingPods": True}}],
    }
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}, ignoring])
    berth = berth_factory(args=("--scheduler-config", config))
    berth.create_namespace("pref")
    liked = node_names(berth)[0]
    # A placed pod that prefers company labelled app=friend, on a node it half fills.
    fan = cpu_pod("fan", "pref", "default-scheduler", cpu="2", memory="8Gi",
                  nodeSelector={"kubernetes.io/hostname": liked},
                  affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                      {"weight": 100, "podAffinityTerm": {
                          "topologyKey": "kubernetes.io/hostname",
                          "labelSelector": {"matchLabels": {"app": "friend"}}}}]}})
    create(berth, fan)
    assert placed(berth, "pref", "fan") == liked

    def friend(name, scheduler):
        p = cpu_pod(name, "pref", scheduler, cpu="100m", memory="128Mi")
        p["metadata"]["labels"] = {"app": "friend"}
        return p

    # The default profile counts the placed pod's preference: the friend joins it.
    create(berth, friend("counted", "default-scheduler"))
    assert placed(berth, "pref", "counted") == liked
    # Ignoring it, only the resource scores remain: the emptier nodes win.
    create(berth, friend("ignored", "ignoring"))
    assert placed(berth, "pref", "ignored") != liked


def test_preemption_with_candidate_bounds_still_finds_victims(berth_factory, tmp_path):
    bounded = {
        "schedulerName": "default-scheduler",
        "pluginConfig": [{"name": "DefaultPreemption", "args": {
            "minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}}],
    }
    config = write_config(tmp_path, [bounded])
    berth = berth_factory(args=("--scheduler-config", config))
    create(berth, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": "high"}, "value": 1000})
    berth.create_namespace("pre")
    for i, node in enumerate(node_names(berth)):
        create(berth, cpu_pod(f"low-{i}", "pre", "default-scheduler", cpu="3", memory="1Gi",
                              nodeSelector={"kubernetes.io/hostname": node}))
        placed(berth, "pre", f"low-{i}")
    create(berth, cpu_pod("urgent", "pre", "default-scheduler", cpu="3", memory="1Gi",
                          priorityClassName="high"))
    node = placed(berth, "pre", "urgent")
    remaining = {p.metadata.name for p in berth.core.list_namespaced_pod("pre").items
                 if p.metadata.deletion_timestamp is None}
    assert "urgent" in remaining
    assert len(remaining) == 3, remaining
    assert node in node_names(berth)

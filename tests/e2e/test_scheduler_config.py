"""KubeSchedulerConfiguration v1 (`berth serve --scheduler-config`, `berth scheduler --config`):
profiles served by one process, upstream's field-naming refusals, a bin-packing profile, and
1.35's FailedScheduling wording."""

import subprocess

import conftest
from conftest import eventually, to_yaml
from scheduler_support import node_of, wait_bound, wait_failed_scheduling

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

#: A profile that packs: NodeResourcesFit scores MostAllocated, and the balance score is off.
PACKER = {
    "schedulerName": "packer",
    "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
    "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
    ],
}


def write_config(tmp_path, profiles, name="scheduler-config.yaml"):
    path = tmp_path / name
    path.write_text(to_yaml({**HEAD, "profiles": profiles}))
    return path


def cpu_pod(name, ns, scheduler, cpu="500m", memory="2Gi", **spec):
    """A pod requesting an eighth of a simulated node (4 cpu, 16Gi), whose image no node has
    (image locality stays out of the scores)."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": f"example.com/{name}:1",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            **spec,
        },
    }


def create(berth, *docs):
    berth.kubectl("apply", "-f", "-", stdin=to_yaml(list(docs)))


def scheduled_by(berth, ns, pod):
    """The `reportingComponent` (or source) of the pod's Scheduled event."""
    events = berth.kubectl_json("get", "events", "-n", ns)
    for e in events["items"]:
        if e.get("reason") == "Scheduled" and e["involvedObject"]["name"] == pod:
            return e.get("reportingComponent") or e.get("source", {}).get("component")
    return None


def test_two_profiles_in_one_process_each_bind_their_own_pods(berth_factory, tmp_path):
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}, PACKER])
    berth = berth_factory(args=("--scheduler-config", config))
    berth.create_namespace("two")
    create(berth, cpu_pod("by-default", "two", "default-scheduler"),
           cpu_pod("by-packer", "two", "packer"),
           cpu_pod("by-nobody", "two", "nobody"))
    wait_bound(berth, "two", "by-default")
    wait_bound(berth, "two", "by-packer")
    assert eventually(lambda: scheduled_by(berth, "two", "by-packer"),
                      what="the packer's Scheduled event") == "packer"
    assert eventually(lambda: scheduled_by(berth, "two", "by-default"),
                      what="the default profile's Scheduled event") == "default-scheduler"
    # No profile is named "nobody": that pod is nobody's to schedule.
    assert node_of(berth, "two", "by-nobody") == ""


def test_most_allocated_profile_packs_pods_where_the_default_profile_spreads(
        berth_factory, tmp_path):
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}, PACKER])
    berth = berth_factory(args=("--scheduler-config", config))
    berth.create_namespace("pack")
    for i in range(3):
        create(berth, cpu_pod(f"packed-{i}", "pack", "packer"))
        wait_bound(berth, "pack", f"packed-{i}")
    packed = {node_of(berth, "pack", f"packed-{i}") for i in range(3)}
    assert len(packed) == 1, packed
    berth.kubectl("delete", "pods", "--all", "-n", "pack", "--wait=true")
    for i in range(3):
        create(berth, cpu_pod(f"spread-{i}", "pack", "default-scheduler"))
        wait_bound(berth, "pack", f"spread-{i}")
    spread = {node_of(berth, "pack", f"spread-{i}") for i in range(3)}
    assert len(spread) == 3, spread


def test_a_pending_pods_failed_scheduling_message_is_worded_as_1_35(berth_factory, tmp_path):
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}])
    berth = berth_factory(args=("--scheduler-config", config))
    berth.create_namespace("wording")
    create(berth,
           cpu_pod("nowhere", "wording", "default-scheduler", nodeSelector={"disk": "none"}),
           cpu_pod("too-big", "wording", "default-scheduler", cpu="1000"))
    out = wait_failed_scheduling(berth, "wording", "nowhere")
    assert ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
            "no new claims to deallocate, preemption: 0/3 nodes are available: "
            "3 Preemption is not helpful for scheduling.") in " ".join(out.split()), out
    out = wait_failed_scheduling(berth, "wording", "too-big")
    assert ("0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, "
            "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
            ) in " ".join(out.split()), out
    cond = berth.kubectl_json("get", "pod", "nowhere", "-n", "wording")["status"]["conditions"]
    assert any(c["type"] == "PodScheduled" and c["reason"] == "Unschedulable"
               and "didn't match Pod's node affinity/selector" in c["message"] for c in cond)


def test_nodes_within_a_decile_are_told_apart_as_kube_scheduler_does(berth_factory, tmp_path):
    """Scores are 1.35's 0..100, not 3.11's 0..10 times ten. A profile scoring with
    NodeResourcesFit (LeastAllocated) alone; three nodes with 4000m cpu and 16284Mi memory
    allocatable (16Gi less the 100Mi eviction threshold), fillers bound to them, and a pod of
    100m and 256Mi. Requested on each node with the pod, and the free share per resource,
    `(allocatable - requested) * 100 / allocatable` (integer division):

    - node 1: cpu 440m -> 3560*100/4000 = 89, memory 3400Mi -> 12884*100/16284 = 79:
      (89 + 79) / 2 = 84
    - node 2: cpu 1200m -> 2800*100/4000 = 70, memory 1600Mi -> 14684*100/16284 = 90:
      (70 + 90) / 2 = 80
    - node 3: cpu 3100m -> 900*100/4000 = 22, memory 8448Mi -> 7836*100/16284 = 48: 35

    kube-scheduler binds the pod to node 1 (84 against 80). 3.11's formula scores the free
    tenths, node 1 (8 + 7) / 2 = 7 and node 2 (7 + 9) / 2 = 8, so 0..10 times ten would bind
    it to node 2."""
    config = write_config(tmp_path, [{
        "schedulerName": "default-scheduler",
        "plugins": {"score": {"disabled": [{"name": "*"}],
                              "enabled": [{"name": "NodeResourcesFit"}]}},
    }])
    berth = berth_factory(args=("--scheduler-config", config))
    nodes = sorted(n["metadata"]["name"] for n in berth.kubectl_json("get", "nodes")["items"])
    assert len(nodes) == 3, nodes
    for n in nodes:
        alloc = berth.kubectl_json("get", "node", n)["status"]["allocatable"]
        assert alloc["cpu"] == "4" and alloc["memory"] in {"16284Mi", str(16284 * 2**20)}, alloc
    placed = berth.kubectl_json("get", "pods", "-A")["items"]
    assert not [p for p in placed if p["spec"].get("nodeName")], "the nodes start empty"
    berth.create_namespace("decile")
    fillers = {nodes[0]: ("340m", "3144Mi"), nodes[1]: ("1100m", "1344Mi"),
               nodes[2]: ("3000m", "8192Mi")}
    for i, (node, (cpu, memory)) in enumerate(fillers.items()):
        create(berth, cpu_pod(f"filler-{i}", "decile", "default-scheduler", cpu=cpu,
                              memory=memory, nodeName=node))
    for i in range(3):
        eventually(lambda i=i: berth.kubectl_json("get", "pod", f"filler-{i}", "-n", "decile")
                   ["status"].get("phase") == "Running", what=f"filler-{i} to run")
    create(berth, cpu_pod("placed", "decile", "default-scheduler", cpu="100m", memory="256Mi"))
    assert wait_bound(berth, "decile", "placed") == nodes[0]


def run_berth(*args):
    return subprocess.run([str(conftest.BERTH_BIN), *map(str, args)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_a_bad_config_is_refused_naming_the_field(tmp_path):
    bad = write_config(tmp_path, [{
        "schedulerName": "default-scheduler",
        "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit"}, {"name": "Foo"}]}},
        "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}],
    }], name="bad.yaml")
    r = run_berth("scheduler", "--config", bad, "--kubeconfig", tmp_path / "none")
    assert r.returncode != 0
    assert ('profiles[0].plugins.score.enabled[1]: Invalid value: "Foo": '
            'ScorePlugin "Foo" does not exist') in r.stderr, r.stderr
    # The serve flag refuses it before serving anything.
    r = run_berth("serve", "--port", "0", "--memory-store", "--data-dir", tmp_path / "d",
                  "--scheduler-config", bad)
    assert r.returncode != 0
    assert "profiles[0].plugins.score.enabled[1]" in r.stderr, r.stderr
    # Args are validated with upstream's words once the plugin names are right.
    args_bad = write_config(tmp_path, [{
        "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}],
    }], name="args.yaml")
    r = run_berth("scheduler", "--config", args_bad)
    assert r.returncode != 0
    assert ("profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: "
            "not in valid range [0, 100]") in r.stderr, r.stderr


def test_a_policy_file_and_a_config_together_are_refused(tmp_path):
    config = write_config(tmp_path, [{"schedulerName": "default-scheduler"}])
    policy = tmp_path / "policy.yaml"
    policy.write_text("kind: Policy\napiVersion: v1\n")
    r = run_berth("scheduler", "--config", config, "--policy-config-file", policy)
    assert r.returncode != 0
    assert "cannot be used together" in r.stderr, r.stderr

"""A pod's generation and the observedGeneration of its status (1.35's
PodObservedGenerationTracking), as upstream's specs in test/e2e/node/pods.go ("Pod Generation")
check them against `berth serve`:

- "pod generation should start at 1 and increment per update" (with observedGeneration
  converging after each update);
- "custom-set generation on new pods and graceful delete" (conformance in 1.35);
- "issue 500 podspec updates and verify generation and observedGeneration eventually converge"
  (here 50: the same convergence, a tenth of the writes);
- "pod rejected by kubelet should have updated generation and observedGeneration";
- "pod observedGeneration field set in pod conditions".
"""

from kubernetes import client as k8s

from conftest import eventually, pod

CONDITIONS = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
              "PodScheduled"]


def observed(berth, ns, name, generation):
    """Waits for the pod's status to say it reflects `generation` (upstream's
    WaitForPodObservedGeneration)."""
    return eventually(
        lambda: berth.core.read_namespaced_pod(name, ns).status.observed_generation == generation,
        timeout=30, what=f"status.observedGeneration {generation}")


def conditions_observed(berth, ns, name, generation):
    def check():
        conds = {c.type: c.observed_generation
                 for c in berth.core.read_namespaced_pod(name, ns).status.conditions or []}
        return all(conds.get(t) == generation for t in CONDITIONS)
    return eventually(check, timeout=30, what=f"every condition at generation {generation}")


def running(berth, ns, name):
    return eventually(
        lambda: berth.core.read_namespaced_pod(name, ns).status.phase == "Running",
        what=f"{name} Running")


def update(berth, ns, name, change):
    """Read, change, replace; again on a conflict (the kubelet writes the status meanwhile), as
    the e2e framework's PodClient.Update does."""
    for _ in range(20):
        p = berth.core.read_namespaced_pod(name, ns)
        change(p)
        try:
            return berth.core.replace_namespaced_pod(name, ns, p)
        except k8s.exceptions.ApiException as e:
            if e.status != 409:
                raise
    raise AssertionError(f"{name}: conflicts on every try")


def test_generation_starts_at_one_and_moves_with_each_spec_update(berth, ns):
    body = pod("gen", scheduler=None)
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["true"]}]
    berth.core.create_namespaced_pod(ns, body)
    running(berth, ns, "gen")
    assert berth.core.read_namespaced_pod("gen", ns).metadata.generation == 1
    observed(berth, ns, "gen", 1)

    def tolerations(p):
        p.spec.tolerations = (p.spec.tolerations or []) + [k8s.V1Toleration(
            key="foo", operator="Equal", value="bar", effect="NoSchedule")]

    def deadline(p):
        p.spec.active_deadline_seconds = 5000

    def image(p):
        p.spec.containers[0].image = "nginx:1.28"

    def init_image(p):
        p.spec.init_containers[0].image = "registry.k8s.io/pause:3.10"

    def annotate(p):
        p.metadata.annotations = {"key": "value"}

    def client_generation(p):
        p.metadata.generation = 1

    expected = 1
    for change, bumps in [(lambda p: None, False), (tolerations, True), (deadline, True),
                          (image, True), (init_image, True), (annotate, False),
                          (client_generation, False)]:
        update(berth, ns, "gen", change)
        expected += bumps
        assert berth.core.read_namespaced_pod("gen", ns).metadata.generation == expected
        observed(berth, ns, "gen", expected)


def test_a_custom_generation_is_overwritten_and_a_graceful_delete_moves_it(berth, ns):
    body = pod("custom", scheduler=None)
    body["metadata"]["generation"] = 100
    created = berth.core.create_namespaced_pod(ns, body)
    assert created.metadata.generation == 1
    running(berth, ns, "custom")
    # The simulated kubelet stops a container at once and then removes the pod, so a read
    # after the delete may find nothing: the graceful DELETE's answer is the pod as marked.
    deleting = berth.core.delete_namespaced_pod("custom", ns, grace_period_seconds=60)
    assert deleting.metadata.deletion_timestamp is not None
    assert deleting.metadata.generation == 2


def test_many_spec_updates_converge(berth, ns):
    berth.core.create_namespaced_pod(ns, pod("many", scheduler=None, activeDeadlineSeconds=5000))
    running(berth, ns, "many")
    for _ in range(49):
        def lower(p):
            p.spec.active_deadline_seconds -= 1
        update(berth, ns, "many", lower)
    observed(berth, ns, "many", 50)
    assert berth.core.read_namespaced_pod("many", ns).metadata.generation == 50


def test_a_pod_the_kubelet_rejects_carries_its_generation(berth, ns):
    big = pod("out-of-cpu", scheduler=None)
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1000000000000"}}
    berth.core.create_namespaced_pod(ns, big)

    def unschedulable():
        conds = berth.core.read_namespaced_pod("out-of-cpu", ns).status.conditions or []
        return [c for c in conds if c.type == "PodScheduled" and c.reason == "Unschedulable"]
    conds = eventually(unschedulable, what="PodScheduled=False Unschedulable")
    assert len(berth.core.read_namespaced_pod("out-of-cpu", ns).status.conditions) == 1
    assert conds[0].observed_generation == 1
    node = berth.core.list_node().items[0].metadata.name
    berth.core.create_namespaced_binding(ns, k8s.V1Binding(
        metadata=k8s.V1ObjectMeta(name="out-of-cpu"),
        target=k8s.V1ObjectReference(kind="Node", name=node)), _preload_content=False)
    got = eventually(
        lambda: (p := berth.core.read_namespaced_pod("out-of-cpu", ns)).status.reason == "OutOfcpu"
        and p, what="rejected OutOfcpu")
    assert got.metadata.generation == 1
    assert got.status.observed_generation == 1


def test_every_condition_says_which_generation_it_reflects(berth, ns):
    berth.core.create_namespaced_pod(ns, pod("conds", scheduler=None))
    conditions_observed(berth, ns, "conds", 1)

    def image(p):
        p.spec.containers[0].image = "nginx:1.28"
    update(berth, ns, "conds", image)
    conditions_observed(berth, ns, "conds", 2)


def test_a_status_write_that_clears_observed_generation_keeps_the_stored_one(berth, ns):
    berth.core.create_namespaced_pod(ns, pod("keep", scheduler=None))
    observed(berth, ns, "keep", 1)
    p = berth.core.read_namespaced_pod("keep", ns)
    p.status.observed_generation = None
    kept = berth.core.replace_namespaced_pod_status("keep", ns, p)
    assert kept.status.observed_generation == 1

"""`berth explain` explains with the policy the pod's scheduler runs: the scheduler publishes it
as `kube-system/<schedulerName>-running-policy`, and explain reads it when no policy file is given."""

import json

from scheduler_support import explain, explain_json, pod, wait_bound

#: Only resources and host ports: a nodeSelector no node matches does not keep a pod off.
POLICY = {"kind": "Policy", "apiVersion": "v1",
          "predicates": [{"name": "PodFitsResources"}, {"name": "PodFitsHostPorts"}],
          "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}


def test_explain_uses_the_policy_the_running_scheduler_published(berth_factory, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    b = berth_factory(nodes=2, args=("--policy-config-file", str(policy)))
    cm = b.kubectl_json("get", "configmap", "default-scheduler-running-policy", "-n", "kube-system")
    assert json.loads(cm["data"]["policy.cfg"])["predicates"] == POLICY["predicates"]
    assert cm["metadata"]["annotations"]["berth.io/policy-source"] == str(policy)

    ns = "explained"
    b.create_namespace(ns)
    b.kubectl("apply", "-f", "-", stdin=pod("anywhere", ns, nodeSelector={"region": "nowhere"}))
    node = wait_bound(b, ns, "anywhere")

    # What the running scheduler did: every node fits, as the table says.
    out = explain(b, ns, "anywhere")
    assert out.returncode == 0, out.stderr
    last = out.stdout.splitlines()[-1]
    assert last == ("Policy: the one default-scheduler runs "
                     f"(ConfigMap kube-system/default-scheduler-running-policy, from {policy})")
    ex = explain_json(b, ns, "anywhere")
    assert all(n["result"] == "Fit" for n in ex["nodes"]), ex
    assert node in [n["node"] for n in ex["nodes"]]

    # The default policy, given as a file, would have kept it off every node.
    default = tmp_path / "default.json"
    default.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1"}))
    out = explain(b, ns, "anywhere", "--policy-config-file", str(default), "-o", "json")
    assert out.returncode == 0, out.stderr
    assert not any(n["result"] == "Fit" for n in json.loads(out.stdout)["nodes"])
    assert out.stderr.strip() == f"Policy: the file {default}"


def test_a_scheduler_that_published_no_policy_is_refused_by_name(berth, ns):
    b = berth
    b.kubectl("apply", "-f", "-", stdin=pod("elsewhere", ns, schedulerName="my-scheduler"))
    out = explain(b, ns, "elsewhere")
    assert out.returncode != 0
    assert ('the pod\'s scheduler "my-scheduler" published no policy '
            "(no ConfigMap kube-system/my-scheduler-running-policy)") in out.stderr
    # The shared server runs the default policy, and says so when explaining its pods.
    b.kubectl("apply", "-f", "-", stdin=pod("here", ns))
    out = explain(b, ns, "here")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == ("Policy: the one default-scheduler runs "
                                           "(ConfigMap kube-system/default-scheduler-running-policy, "
                                           "from default)")

"""Node operations with kubectl: taints, cordon, labels. Each test leaves the node as it found it."""

import json

import pytest


def node(berth, name):
    return berth.kubectl_json("get", "node", name)


@pytest.fixture
def node1(berth):
    """node-1, restored afterwards (taints, unschedulable, the test's label)."""
    yield "node-1"
    berth.kubectl("patch", "node", "node-1", "--type", "merge",
                  "-p", '{"spec":{"taints":null,"unschedulable":null}}')
    berth.kubectl("label", "node", "node-1", "e2e-", check=False)


def test_taint_and_untaint(berth, node1):
    out = berth.kubectl("taint", "nodes", node1, "key1=value1:NoSchedule").stdout
    assert out.strip() == "node/node-1 tainted"
    assert node(berth, node1)["spec"]["taints"] == [
        {"key": "key1", "value": "value1", "effect": "NoSchedule"}]

    berth.kubectl("taint", "nodes", node1, "key2:NoExecute")
    taints = node(berth, node1)["spec"]["taints"]
    # kubectl puts the new taint first and sends the whole list (taints are an atomic list).
    assert sorted((t["key"], t.get("value"), t["effect"]) for t in taints) == [
        ("key1", "value1", "NoSchedule"), ("key2", None, "NoExecute")]

    out = berth.kubectl("taint", "nodes", node1, "key1:NoSchedule-").stdout
    assert out.strip() == "node/node-1 untainted"
    assert [t["key"] for t in node(berth, node1)["spec"]["taints"]] == ["key2"]
    berth.kubectl("taint", "nodes", node1, "key2-")
    assert not node(berth, node1)["spec"].get("taints")
    described = berth.kubectl("describe", "node", node1).stdout
    assert "Taints:             <none>" in described


def test_taint_shows_in_describe_node(berth, node1):
    berth.kubectl("taint", "nodes", node1, "dedicated=gpu:NoSchedule")
    described = berth.kubectl("describe", "node", node1).stdout
    assert "dedicated=gpu:NoSchedule" in described


def test_taint_with_the_same_key_and_effect_needs_overwrite(berth, node1):
    berth.kubectl("taint", "nodes", node1, "k=a:NoSchedule")
    r = berth.kubectl("taint", "nodes", node1, "k=b:NoSchedule", check=False)
    assert r.returncode != 0 and "already has k taint(s) with same effect(s)" in r.stderr
    berth.kubectl("taint", "nodes", node1, "k=b:NoSchedule", "--overwrite")
    assert node(berth, node1)["spec"]["taints"] == [
        {"key": "k", "value": "b", "effect": "NoSchedule"}]


def test_cordon_and_uncordon(berth, node1):
    assert berth.kubectl("cordon", node1).stdout.strip() == "node/node-1 cordoned"
    assert node(berth, node1)["spec"]["unschedulable"] is True
    row = next(line for line in berth.kubectl("get", "nodes").stdout.splitlines()
               if line.startswith("node-1 "))
    assert row.split()[1] == "Ready,SchedulingDisabled"
    assert berth.kubectl("cordon", node1).stdout.strip() == "node/node-1 already cordoned"
    assert berth.kubectl("get", "nodes", "--field-selector", "spec.unschedulable=true",
                         "-o", "name").stdout.split() == ["node/node-1"]

    assert berth.kubectl("uncordon", node1).stdout.strip() == "node/node-1 uncordoned"
    assert not node(berth, node1)["spec"].get("unschedulable")
    row = next(line for line in berth.kubectl("get", "nodes").stdout.splitlines()
               if line.startswith("node-1 "))
    assert row.split()[1] == "Ready"


def test_label_node_and_select_by_it(berth, node1):
    berth.kubectl("label", "node", node1, "e2e=yes")
    out = berth.kubectl("get", "nodes", "-l", "e2e=yes", "-o", "name").stdout
    assert out.split() == ["node/node-1"]
    shown = berth.kubectl("get", "nodes", "--show-labels").stdout
    row = next(line for line in shown.splitlines() if line.startswith("node-1 "))
    assert "e2e=yes" in row
    berth.kubectl("label", "node", node1, "e2e-")
    assert "e2e" not in node(berth, node1)["metadata"]["labels"]


def test_invalid_taints_are_refused_and_change_nothing(berth, node1):
    before = node(berth, node1)
    cases = [
        ([{"key": "bad key!", "effect": "NoSchedule"}], "spec.taints[0].key"),
        ([{"key": "k", "value": "x" * 64, "effect": "NoSchedule"}], "spec.taints[0].value"),
        ([{"key": "k", "effect": "Sometimes"}], "spec.taints[0].effect"),
        ([{"key": "k", "value": "v"}], "spec.taints[0].effect"),
    ]
    for taints, field in cases:
        patch = json.dumps({"spec": {"taints": taints}})
        r = berth.kubectl("patch", "node", node1, "-p", patch, check=False)
        assert r.returncode != 0, f"{taints} was accepted"
        assert "is invalid" in r.stderr and field in r.stderr, r.stderr
    after = node(berth, node1)
    assert after["spec"] == before["spec"]

"""ControllerRevisions as garbage-collector dependents, driven with kubectl: a StatefulSet's and
a DaemonSet's revisions carry a controller ownerReference with blockOwnerDeletion, so that
`kubectl delete --cascade=background|foreground` removes them with the set and
`--cascade=orphan` keeps them (without the reference). Timeouts only keep a broken server from
hanging the suite; nothing asserts on durations.
"""

import pytest

from conftest import eventually
from test_statefulsets import daemon_set, stateful_set


def revisions(b, ns, app):
    return b.kubectl_json("get", "controllerrevisions", "-n", ns, "-l", f"app={app}")["items"]


def gone(b, ns, kind, name):
    return b.kubectl("get", kind, name, "-n", ns, check=False).returncode != 0


def created(b, ns, kind, manifest):
    """Applies the set, rolls it once (two revisions) and returns its uid."""
    name = manifest["metadata"]["name"]
    b.kubectl("apply", "-f", "-", stdin=manifest)
    b.kubectl("rollout", "status", f"{kind}/{name}", "-n", ns, "--timeout=90s")
    b.kubectl("set", "image", f"{kind}/{name}", "c=nginx:1.28", "-n", ns)
    b.kubectl("rollout", "status", f"{kind}/{name}", "-n", ns, "--timeout=90s")
    return b.kubectl_json("get", kind, name, "-n", ns)["metadata"]["uid"]


@pytest.mark.parametrize("kind,cascade", [
    ("sts", "background"), ("sts", "foreground"), ("ds", "background"), ("ds", "foreground")])
def test_deleting_the_set_removes_its_revisions(berth, ns, kind, cascade):
    b = berth
    name = f"rev-{kind}-{cascade[:4]}"
    manifest = stateful_set(name, ns, replicas=1) if kind == "sts" else daemon_set(name, ns)
    uid = created(b, ns, kind, manifest)
    revs = revisions(b, ns, name)
    assert len(revs) == 2
    for r in revs:
        (ref,) = r["metadata"]["ownerReferences"]
        assert ref["uid"] == uid
        assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
    b.kubectl("delete", kind, name, "-n", ns, f"--cascade={cascade}", "--wait=false")
    eventually(lambda: not revisions(b, ns, name) and gone(b, ns, kind, name), timeout=90,
               what="the set and its revisions gone")


@pytest.mark.parametrize("kind", ["sts", "ds"])
def test_an_orphaning_delete_keeps_the_revisions(berth, ns, kind):
    b = berth
    name = f"orph-{kind}"
    manifest = stateful_set(name, ns, replicas=1) if kind == "sts" else daemon_set(name, ns)
    created(b, ns, kind, manifest)
    names = sorted(r["metadata"]["name"] for r in revisions(b, ns, name))
    b.kubectl("delete", kind, name, "-n", ns, "--cascade=orphan")
    eventually(lambda: gone(b, ns, kind, name), what="the set gone")

    def released():
        revs = revisions(b, ns, name)
        return all(not r["metadata"].get("ownerReferences") for r in revs) and revs

    kept = eventually(released, what="revisions released")
    assert sorted(r["metadata"]["name"] for r in kept) == names

"""OpenShift's APIs that the `oc` procedures of its documentation use (issue 33).

The tests cannot download `oc`: each drives the HTTP calls the named `oc` command makes, with
kubectl's raw mode (`kubectl create --raw`, `kubectl get --raw`) as a plain user (a `berth
kubeconfig` certificate) or as the admin, and says which `oc` command it stands for.
"""

import json
import uuid

from conftest import eventually, pod
from test_hardening import as_user, user_kubeconfig

PROJECTS = "/apis/project.openshift.io/v1/projects"
REQUESTS = "/apis/project.openshift.io/v1/projectrequests"


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def raw_create(berth, kubeconfig, path, body):
    """`kubectl create --raw` as `kubeconfig`'s user (the admin's with None)."""
    args = ["create", "--raw", path, "-f", "-"]
    if kubeconfig is None:
        return berth.kubectl(*args, stdin=json.dumps(body), check=False)
    return as_user(berth, kubeconfig, *args, stdin=json.dumps(body))


def raw_get(berth, kubeconfig, path):
    if kubeconfig is None:
        return berth.kubectl("get", "--raw", path, check=False)
    return as_user(berth, kubeconfig, "get", "--raw", path)


def test_a_plain_user_requests_a_project_and_administers_it(berth, tmp_path):
    """`oc new-project P --display-name=... --description=...`, then `oc projects`,
    `oc project P`, `oc create rolebinding ...` in it, and `oc delete project P`."""
    user = name("alice")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    project = name("proj")
    request = {"kind": "ProjectRequest", "apiVersion": "project.openshift.io/v1",
               "metadata": {"name": project}, "displayName": "My Project",
               "description": "what it is for"}
    r = eventually(lambda: (lambda r: r if r.returncode == 0 else None)(
        raw_create(berth, kubeconfig, REQUESTS, request)), what="the project request")
    created = json.loads(r.stdout)
    assert created["kind"] == "Project" and created["metadata"]["name"] == project
    annotations = created["metadata"]["annotations"]
    assert annotations["openshift.io/requester"] == user
    assert annotations["openshift.io/display-name"] == "My Project"
    assert annotations["openshift.io/description"] == "what it is for"
    assert created["status"]["phase"] == "Active"

    # The requester is admin of it through a RoleBinding `admin`, as the default template.
    binding = berth.kubectl_json("get", "rolebinding", "admin", "-n", project)
    assert binding["roleRef"]["name"] == "admin"
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                    "name": user}]

    # `oc projects`: only the projects they may see; `oc project P`: their project.
    def listed():
        r = raw_get(berth, kubeconfig, PROJECTS)
        return r.returncode == 0 and json.loads(r.stdout)
    projects = eventually(lambda: listed() and project in
                          [p["metadata"]["name"] for p in listed()["items"]] and listed(),
                          what="the user's project in their list")
    names = [p["metadata"]["name"] for p in projects["items"]]
    assert project in names and "default" not in names and "kube-system" not in names
    assert projects["kind"] == "ProjectList"
    got = json.loads(raw_get(berth, kubeconfig, f"{PROJECTS}/{project}").stdout)
    assert got["metadata"]["name"] == project
    r = raw_get(berth, kubeconfig, f"{PROJECTS}/default")
    assert r.returncode != 0 and "forbidden" in r.stderr

    # As admin of the project they may grant others and run pods there.
    r = as_user(berth, kubeconfig, "create", "rolebinding", "viewer", "-n", project,
                "--clusterrole=view", "--user=someone")
    assert r.returncode == 0, r.stderr
    r = as_user(berth, kubeconfig, "run", "p", "-n", project, "--image=nginx")
    assert r.returncode == 0, r.stderr

    # `oc get projects` prints OpenShift's columns.
    table = berth.kubectl("get", "projects.project.openshift.io", project).stdout
    assert table.split("\n")[0].split() == ["NAME", "DISPLAY", "NAME", "STATUS"]
    assert "My Project" in table and "Active" in table

    # `oc delete project P`: the namespace goes.
    r = as_user(berth, kubeconfig, "delete", "--raw", f"{PROJECTS}/{project}")
    assert r.returncode == 0, r.stderr
    eventually(lambda: berth.kubectl("get", "namespace", project, check=False).returncode != 0,
               what="the project's namespace deleted")


def test_project_requests_need_the_self_provisioner_role(berth, tmp_path):
    """`oc new-project` by a user whose self-provisioning was taken away (`oc adm policy
    remove-cluster-role-from-group self-provisioner system:authenticated`)."""
    user = name("nobody")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    # Reserved names are refused to everyone who may request projects.
    r = raw_create(berth, kubeconfig, REQUESTS, {
        "kind": "ProjectRequest", "apiVersion": "project.openshift.io/v1",
        "metadata": {"name": "openshift-mine"}})
    assert r.returncode != 0
    assert 'cannot request a project starting with \\"openshift-\\"' in r.stderr or \
        'cannot request a project starting with "openshift-"' in r.stderr, r.stderr
    # Who may request projects is RBAC's answer (the review `oc` could ask too).
    review = json.loads(berth.kubectl(
        "create", "--raw", "/apis/authorization.openshift.io/v1/resourceaccessreviews", "-f", "-",
        stdin=json.dumps({"kind": "ResourceAccessReview",
                          "apiVersion": "authorization.openshift.io/v1",
                          "verb": "create", "resourceAPIGroup": "project.openshift.io",
                          "resource": "projectrequests"})).stdout)
    assert "system:authenticated" in review["groups"]


def test_an_administrator_creates_a_project_with_a_node_selector(berth):
    """`oc adm new-project P --node-selector='type=user-node,region=east'`: the project's pods
    get the selector (16.5.4, 16.10)."""
    project = name("east")
    body = {"kind": "Project", "apiVersion": "project.openshift.io/v1",
            "metadata": {"name": project,
                         "annotations": {"openshift.io/node-selector": "type=user-node,region=east"}}}
    created = json.loads(berth.kubectl("create", "--raw", PROJECTS, "-f", "-",
                                       stdin=json.dumps(body)).stdout)
    assert created["kind"] == "Project"
    ns = berth.kubectl_json("get", "namespace", project)
    assert ns["metadata"]["annotations"]["openshift.io/node-selector"] == "type=user-node,region=east"
    berth.kubectl("create", "-f", "-", stdin=json.dumps(pod("p", namespace=project,
                                                              nodeSelector={"app": "x"})))
    got = berth.kubectl_json("get", "pod", "p", "-n", project)
    assert got["spec"]["nodeSelector"] == {"type": "user-node", "region": "east", "app": "x"}
    # A pod naming a node outside the project's selector: OpenShift's words.
    r = berth.kubectl("create", "-f", "-", check=False,
                      stdin=json.dumps(pod("q", namespace=project, node="node-1")))
    assert r.returncode != 0
    assert "pod node name conflicts with project node label selector" in r.stderr, r.stderr
    r = berth.kubectl("create", "-f", "-", check=False,
                      stdin=json.dumps(pod("q", namespace=project, node="no-such-node")))
    assert 'cannot validate project node label selector: node "no-such-node" not found' \
        in r.stderr, r.stderr


def test_who_can_lists_the_subjects_rbac_binds(berth):
    """`oc adm policy who-can get pods -n NS` (a LocalResourceAccessReview) and
    `oc adm policy who-can get nodes --all-namespaces` (a ResourceAccessReview)."""
    ns = name("whocan")
    berth.kubectl("create", "namespace", ns)
    berth.kubectl("create", "rolebinding", "carol-edit", "-n", ns, "--clusterrole=edit",
                  "--user=carol")
    berth.kubectl("create", "rolebinding", "robots", "-n", ns, "--clusterrole=view",
                  f"--serviceaccount={ns}:robot", "--group=auditors")

    def review(path, body):
        return json.loads(berth.kubectl("create", "--raw", path, "-f", "-",
                                        stdin=json.dumps(body)).stdout)

    local = {"kind": "LocalResourceAccessReview", "apiVersion": "authorization.openshift.io/v1",
             "namespace": "", "verb": "get", "resourceAPIGroup": "", "resourceAPIVersion": "",
             "resource": "pods", "resourceName": "", "path": "", "isNonResourceURL": False}
    got = eventually(lambda: (lambda r: "carol" in r["users"] and r)(review(
        f"/apis/authorization.openshift.io/v1/namespaces/{ns}/localresourceaccessreviews",
        local)), what="carol in the review")
    assert got["kind"] == "ResourceAccessReviewResponse" and got["namespace"] == ns
    assert f"system:serviceaccount:{ns}:robot" in got["users"]
    assert {"auditors", "system:masters"} <= set(got["groups"])
    assert "evalutionError" in got
    # Deleting is edit's, not view's.
    local["verb"] = "delete"
    got = review(f"/apis/authorization.openshift.io/v1/namespaces/{ns}/localresourceaccessreviews",
                 local)
    assert "carol" in got["users"] and "auditors" not in got["groups"]
    cluster = review("/apis/authorization.openshift.io/v1/resourceaccessreviews",
                     {"kind": "ResourceAccessReview",
                      "apiVersion": "authorization.openshift.io/v1",
                      "verb": "get", "resource": "nodes"})
    assert "carol" not in cluster["users"] and "system:masters" in cluster["groups"]


def test_users_groups_and_whoami(berth, tmp_path):
    """`oc whoami` (users/~), `oc create user`, `oc adm groups new devs U` and
    `oc adm policy add-role-to-group edit devs -n NS`: the group's users get its rights."""
    user = name("bob")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    me = json.loads(raw_get(berth, kubeconfig, "/apis/user.openshift.io/v1/users/~").stdout)
    assert me["kind"] == "User" and me["metadata"]["name"] == user
    assert "system:authenticated" in me["groups"]

    berth.kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "user.openshift.io/v1", "kind": "User",
        "metadata": {"name": user}, "fullName": "Bob B"}))
    assert "Bob B" in berth.kubectl("get", "users.user.openshift.io", user).stdout
    group = name("devs")
    berth.kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "user.openshift.io/v1", "kind": "Group",
        "metadata": {"name": group}, "users": [user]}))
    ns = name("team")
    berth.kubectl("create", "namespace", ns)
    berth.kubectl("create", "rolebinding", "devs-edit", "-n", ns, "--clusterrole=edit",
                  f"--group={group}")
    eventually(lambda: as_user(berth, kubeconfig, "auth", "can-i", "create", "pods", "-n", ns)
               .stdout.strip() == "yes", what="the group's rights reach its user")
    me = json.loads(raw_get(berth, kubeconfig, "/apis/user.openshift.io/v1/users/~").stdout)
    assert group in me["groups"]
    # Out of the group, out of its rights.
    berth.kubectl("patch", "groups.user.openshift.io", group, "--type=merge", "-p",
                  json.dumps({"users": []}))
    eventually(lambda: as_user(berth, kubeconfig, "auth", "can-i", "create", "pods", "-n", ns)
               .stdout.strip() == "no", what="the group's rights leave its former user")


def test_openshifts_bootstrap_roles_and_priority_class(berth, tmp_path):
    """`oc debug node/N` needs `openshift-user-critical`; `oc adm policy
    add-cluster-role-to-user cluster-reader U` binds a role that reads but not secrets."""
    pc = berth.kubectl_json("get", "priorityclass", "openshift-user-critical")
    assert pc["value"] == 1000000000
    for role in ["cluster-reader", "self-provisioner", "basic-user"]:
        berth.kubectl("get", "clusterrole", role)
    user = name("reader")
    kubeconfig = user_kubeconfig(berth, tmp_path, user)
    berth.kubectl("create", "clusterrolebinding", user, "--clusterrole=cluster-reader",
                  f"--user={user}")
    eventually(lambda: as_user(berth, kubeconfig, "auth", "can-i", "list", "nodes")
               .stdout.strip() == "yes", what="cluster-reader reads nodes")
    eventually(lambda: as_user(berth, kubeconfig, "auth", "can-i", "list", "pods", "-A")
               .stdout.strip() == "yes", what="cluster-reader reads pods (through view)")
    assert as_user(berth, kubeconfig, "auth", "can-i", "get", "secrets", "-A").stdout.strip() \
        == "no"
    assert as_user(berth, kubeconfig, "auth", "can-i", "delete", "pods", "-A").stdout.strip() \
        == "no"

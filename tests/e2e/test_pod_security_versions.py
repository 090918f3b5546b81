"""Pod Security admission pinned to a policy version, as a namespace admin meets it
(upstream's pod-security-admission: `pod-security.kubernetes.io/<mode>-version`): a pod is
judged by the checks in force at the pinned version, so the same pod is refused or admitted
as the label moves; moving the label warns of the existing pods the new version would refuse;
a label that cannot be read is refused on the namespace."""

from conftest import pod

RESERVED_PORTS = "net.ipv4.ip_local_reserved_ports"  # a safe sysctl from policy v1.27


def _with_sysctl(name, ns, sysctl):
    p = pod(name, ns)
    p["spec"]["securityContext"] = {"sysctls": [{"name": sysctl, "value": "1"}]}
    return p


def _label(berth, ns, *labels):
    berth.kubectl("label", "namespace", ns, "--overwrite", *labels)


def test_the_enforce_version_decides_which_sysctls_are_safe(berth, ns):
    _label(berth, ns, "pod-security.kubernetes.io/enforce=baseline",
           "pod-security.kubernetes.io/enforce-version=v1.26")
    r = berth.kubectl("create", "-f", "-", stdin=_with_sysctl("reserved", ns, RESERVED_PORTS),
                      check=False)
    assert r.returncode != 0
    assert ('pods "reserved" is forbidden: violates PodSecurity "baseline:v1.26": '
            f'forbidden sysctls ({RESERVED_PORTS})') in r.stderr, r.stderr
    # v1.27 made it safe: the same pod is admitted once the label moves.
    _label(berth, ns, "pod-security.kubernetes.io/enforce-version=v1.27")
    berth.kubectl("create", "-f", "-", stdin=_with_sysctl("reserved", ns, RESERVED_PORTS))
    # Pinning the older version again names the pods it would refuse, and changes nothing.
    r = berth.kubectl("label", "namespace", ns, "--overwrite",
                      "pod-security.kubernetes.io/enforce-version=v1.26")
    assert (f'Warning: existing pods in namespace "{ns}" violate the new PodSecurity enforce '
            'level "baseline:v1.26"') in r.stderr, r.stderr
    assert "Warning: reserved: forbidden sysctls" in r.stderr, r.stderr
    assert berth.kubectl_json("get", "pod", "reserved", "-n", ns)["metadata"]["name"] == "reserved"
    # `latest`, and a version newer than the server's checks, judge as the newest checks do.
    _label(berth, ns, "pod-security.kubernetes.io/enforce-version=v1.99")
    r = berth.kubectl("create", "-f", "-", stdin=_with_sysctl("msgmax", ns, "kernel.msgmax"),
                      check=False)
    assert ('violates PodSecurity "baseline:v1.99": forbidden sysctls (kernel.msgmax)'
            in r.stderr), r.stderr
    berth.kubectl("create", "-f", "-", stdin=_with_sysctl("rmem", ns, "net.ipv4.tcp_rmem"))


def test_the_warn_version_warns_by_its_own_checks(berth, ns):
    _label(berth, ns, "pod-security.kubernetes.io/warn=baseline",
           "pod-security.kubernetes.io/warn-version=v1.28")
    r = berth.kubectl("create", "-f", "-",
                      stdin=_with_sysctl("keepalive", ns, "net.ipv4.tcp_keepalive_time"))
    assert ('Warning: would violate PodSecurity "baseline:v1.28": forbidden sysctls '
            '(net.ipv4.tcp_keepalive_time)') in r.stderr, r.stderr
    _label(berth, ns, "pod-security.kubernetes.io/warn-version=v1.29")
    r = berth.kubectl("create", "-f", "-",
                      stdin=_with_sysctl("keepalive2", ns, "net.ipv4.tcp_keepalive_time"))
    assert "would violate PodSecurity" not in r.stderr, r.stderr


def test_a_version_label_that_cannot_be_read_is_refused(berth, ns):
    r = berth.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=baseline",
                      "pod-security.kubernetes.io/enforce-version=1.26", check=False)
    assert r.returncode != 0
    assert (f'namespaces "{ns}" is invalid' in r.stderr
            or f'Namespace "{ns}" is invalid' in r.stderr), r.stderr
    assert ('metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: '
            '"1.26": must be "latest" or "v1.x"') in r.stderr, r.stderr
    # Nothing changed: the namespace is still unlabelled.
    labels = berth.kubectl_json("get", "namespace", ns)["metadata"].get("labels", {})
    assert "pod-security.kubernetes.io/enforce" not in labels

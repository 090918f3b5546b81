"""The admission chain configured by name from `berth serve --master-config`, in the seed's
`admissionConfig.pluginConfig.<Name>` shape: a plugin configured inline or from a file, a plugin
disabled, a plugin berth does not implement named in a warning, and a bad configuration that
stops the start naming file, plugin and field."""

import json
import subprocess

from conftest import BERTH_BIN, eventually, pod


def tolerations_of(b, name):
    p = b.kubectl_json("get", "pod", name, "-n", "default", "-o", "json")
    return {t["key"]: t.get("tolerationSeconds") for t in p["spec"].get("tolerations", [])}


def test_plugins_are_configured_disabled_and_unknown_ones_named(berth_factory, tmp_path):
    (tmp_path / "dts.yaml").write_text(
        "defaultNotReadyTolerationSeconds: 60\ndefaultUnreachableTolerationSeconds: 120\n"
    )
    mc = tmp_path / "master-config.yaml"
    mc.write_text(
        "admissionConfig:\n"
        "  pluginConfig:\n"
        "    DefaultTolerationSeconds:\n"
        "      location: dts.yaml\n"
        "    PodNodeConstraints:\n"
        "      configuration:\n"
        "        apiVersion: v1\n"
        "        kind: PodNodeConstraintsConfig\n"
        "        nodeSelectorLabelBlacklist: [kubernetes.io/hostname]\n"
        "    BuildDefaults:\n"
        "      configuration:\n"
        "        apiVersion: v1\n"
        "        kind: BuildDefaultsConfig\n"
    )
    b = berth_factory(args=("--master-config", mc))
    b.kubectl("apply", "-f", "-", stdin=json.dumps(pod("tolerant")))
    tolerations = tolerations_of(b, "tolerant")
    assert tolerations["node.kubernetes.io/not-ready"] == 60
    assert tolerations["node.kubernetes.io/unreachable"] == 120
    # PodNodeConstraints is implemented now; BuildDefaults (no builds in berth) is not.
    eventually(lambda: "admission plugin BuildDefaults is configured but berth does not "
               "implement it" in b.log_path.read_text(), what="the unknown-plugin warning")
    assert "admission plugin PodNodeConstraints is configured but" not in b.log_path.read_text()


def test_a_disabled_plugin_does_not_run(berth_factory, tmp_path):
    mc = tmp_path / "master-config.yaml"
    mc.write_text(
        "admissionConfig:\n"
        "  pluginConfig:\n"
        "    DefaultTolerationSeconds:\n"
        "      configuration:\n"
        "        apiVersion: v1\n"
        "        kind: DefaultAdmissionConfig\n"
        "        disable: true\n"
    )
    b = berth_factory(args=("--master-config", mc))
    b.kubectl("apply", "-f", "-", stdin=json.dumps(pod("plain")))
    tolerations = tolerations_of(b, "plain")
    assert "node.kubernetes.io/not-ready" not in tolerations
    assert "node.kubernetes.io/unreachable" not in tolerations


def test_a_bad_configuration_stops_the_start_naming_file_plugin_and_field(tmp_path):
    mc = tmp_path / "bad.yaml"
    mc.write_text(
        "admissionConfig:\n"
        "  pluginConfig:\n"
        "    DefaultTolerationSeconds:\n"
        "      configuration:\n"
        "        defaultNotReadyTolerationSeconds: soon\n"
    )
    r = subprocess.run(
        [str(BERTH_BIN), "serve", "--port", "0", "--data-dir", str(tmp_path / "data"),
         "--master-config", str(mc)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert r.returncode != 0
    assert "bad.yaml" in r.stderr
    assert "DefaultTolerationSeconds" in r.stderr
    assert "defaultNotReadyTolerationSeconds" in r.stderr


def test_pod_security_defaults_and_exemptions_from_the_admission_configuration_file(
        berth_factory, tmp_path):
    """kube-apiserver's --admission-control-config-file: PodSecurity's `defaults` judge
    namespaces without labels; `exemptions` let users, namespaces and runtime classes by."""
    (tmp_path / "pod-security.yaml").write_text(
        "apiVersion: pod-security.admission.config.k8s.io/v1\n"
        "kind: PodSecurityConfiguration\n"
        "defaults:\n"
        "  enforce: baseline\n"
        "  enforce-version: latest\n"
        "exemptions:\n"
        "  usernames: [ci-bot]\n"
        "  namespaces: [exempt]\n"
        "  runtimeClasses: [kata]\n"
    )
    cfg = tmp_path / "admission.yaml"
    cfg.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: AdmissionConfiguration\n"
        "plugins:\n"
        "- name: PodSecurity\n"
        "  path: pod-security.yaml\n"
    )
    b = berth_factory(nodes=1, args=("--admission-control-config-file", cfg))
    b.kubectl("create", "namespace", "exempt")

    def privileged(name, namespace="default", **spec):
        p = pod(name, namespace, **spec)
        p["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        return json.dumps(p)

    r = b.kubectl("create", "-f", "-", stdin=privileged("refused"), check=False)
    assert r.returncode != 0
    assert ('pods "refused" is forbidden: violates PodSecurity "baseline:latest": privileged '
            '(container "c" must not set securityContext.privileged=true)') in r.stderr
    b.kubectl("create", "-f", "-", stdin=privileged("in-exempt-ns", "exempt"))
    r = b.kubectl("--as=ci-bot", "--as-group=system:masters", "create", "-f", "-",
                  stdin=privileged("by-ci-bot"), check=False)
    assert r.returncode == 0, r.stderr
    r = b.kubectl("create", "-f", "-", stdin=privileged("kata", runtimeClassName="kata"),
                  check=False)
    assert "violates PodSecurity" not in r.stderr
    # A namespace's own label wins over the default.
    b.kubectl("label", "namespace", "default", "pod-security.kubernetes.io/enforce=privileged")
    b.kubectl("create", "-f", "-", stdin=privileged("labelled"))


def test_a_bad_pod_security_configuration_stops_the_start(tmp_path):
    cfg = tmp_path / "admission.yaml"
    cfg.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: AdmissionConfiguration\n"
        "plugins:\n"
        "- name: PodSecurity\n"
        "  configuration:\n"
        "    apiVersion: pod-security.admission.config.k8s.io/v1\n"
        "    kind: PodSecurityConfiguration\n"
        "    defaults: {enforce: strict}\n"
    )
    r = subprocess.run([str(BERTH_BIN), "serve", "--port", "0", "--data-dir",
                        str(tmp_path / "data"), "--admission-control-config-file", str(cfg)],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode != 0
    assert "plugins[0].configuration.defaults.enforce" in r.stderr, r.stderr
    assert '"strict": must be one of privileged, baseline, restricted' in r.stderr

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

//! `berth serve --master-config F`: the parts of an OpenShift `master-config.yaml` berth reads.
//!
//! - `kubernetesMasterConfig.schedulerArgs.disablePreemption` (seed 002 §16.6.6). OpenShift
//!   passes scheduler arguments as lists of strings (`disablePreemption: ["true"]`); a plain
//!   boolean or string is accepted too. The value is taken literally: `true` disables preemption.
//! - `admissionConfig.pluginConfig.<Name>`: each admission plugin's `configuration` (an inline
//!   object) or `location` (a file holding it, relative to the master config's folder), for
//!   the API server's admission chain. `configuration: {disable: true}` turns a plugin off.
//! - `projectConfig.defaultNodeSelector`: the node selector of projects without an
//!   `openshift.io/node-selector` annotation, handed to the OriginPodNodeEnvironment admission
//!   plugin as its `defaultNodeSelector`. Other `projectConfig` settings are warned about.

use anyhow::{bail, Context};
use berth_apiserver::AdmissionConfig;
use serde_json::Value;
use std::path::Path;

fn read_yaml(path: &Path, what: &str) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {what} {}", path.display()))?;
    serde_saphyr::from_str(&text).with_context(|| format!("parsing {what} {}", path.display()))
}

/// `disablePreemption` from the file, false without a file or without the setting.
pub fn disable_preemption(path: Option<&Path>) -> anyhow::Result<bool> {
    let Some(path) = path else { return Ok(false) };
    let doc = read_yaml(path, "master config")?;
    let v = &doc["kubernetesMasterConfig"]["schedulerArgs"]["disablePreemption"];
    let one = match v {
        serde_json::Value::Null => return Ok(false),
        serde_json::Value::Array(a) if a.len() == 1 => &a[0],
        other => other,
    };
    match one {
        serde_json::Value::Bool(b) => Ok(*b),
        serde_json::Value::String(s) if s == "true" => Ok(true),
        serde_json::Value::String(s) if s == "false" => Ok(false),
        other => bail!(
            "{}: kubernetesMasterConfig.schedulerArgs.disablePreemption: expected true or false, got {other}",
            path.display()
        ),
    }
}

/// The admission plugins' configurations the file names; none without a file.
pub fn admission_config(path: Option<&Path>) -> anyhow::Result<AdmissionConfig> {
    let mut config = AdmissionConfig::default();
    let Some(path) = path else { return Ok(config) };
    let doc = read_yaml(path, "master config")?;
    let empty = serde_json::Map::new();
    let plugins = match &doc["admissionConfig"]["pluginConfig"] {
        Value::Null => &empty,
        Value::Object(plugins) => plugins,
        other => bail!(
            "{}: admissionConfig.pluginConfig: expected a map of plugin names, got {other}",
            path.display()
        ),
    };
    for (name, entry) in plugins {
        let at = format!("{}: admissionConfig.pluginConfig.{name}", path.display());
        let (inline, location) = (&entry["configuration"], &entry["location"]);
        match (inline, location) {
            (Value::Null, Value::Null) => {
                bail!("{at}: expected a configuration or a location")
            }
            (Value::Null, Value::String(file)) => {
                let file = path.parent().unwrap_or(Path::new(".")).join(file);
                let configuration =
                    read_yaml(&file, &format!("the {name} admission configuration"))?;
                config.insert(name, configuration, file.display().to_string());
            }
            (Value::Null, other) => bail!("{at}.location: expected a file path, got {other}"),
            (configuration, Value::Null) => {
                config.insert(name, configuration.clone(), format!("{at}.configuration"));
            }
            _ => bail!("{at}: give a configuration or a location, not both"),
        }
    }
    project_config(path, &doc, &mut config)?;
    Ok(config)
}

/// Adds the plugins of kube-apiserver's `AdmissionConfiguration` file (its
/// `--admission-control-config-file`) to `config`: `plugins[].name` with an inline
/// `configuration` or a `path` (relative to the file's folder).
pub fn admission_configuration(
    path: Option<&Path>,
    config: &mut AdmissionConfig,
) -> anyhow::Result<()> {
    let Some(path) = path else { return Ok(()) };
    let doc = read_yaml(path, "admission configuration")?;
    let (api_version, kind) = (
        doc["apiVersion"].as_str().unwrap_or(""),
        doc["kind"].as_str().unwrap_or(""),
    );
    if kind != "AdmissionConfiguration"
        || !matches!(
            api_version,
            "apiserver.config.k8s.io/v1"
                | "apiserver.config.k8s.io/v1alpha1"
                | "apiserver.k8s.io/v1alpha1"
        )
    {
        bail!(
            "{}: expected kind AdmissionConfiguration of apiVersion apiserver.config.k8s.io/v1, got {kind:?} of {api_version:?}",
            path.display()
        );
    }
    let plugins = match &doc["plugins"] {
        Value::Null => return Ok(()),
        Value::Array(plugins) => plugins,
        other => bail!("{}: plugins: expected a list, got {other}", path.display()),
    };
    for (i, entry) in plugins.iter().enumerate() {
        let at = format!("{}: plugins[{i}]", path.display());
        let Some(name) = entry["name"].as_str().filter(|n| !n.is_empty()) else {
            bail!("{at}.name: Required value");
        };
        match (&entry["configuration"], &entry["path"]) {
            (Value::Null, Value::Null) => bail!("{at}: expected a configuration or a path"),
            (Value::Null, Value::String(file)) => {
                let file = path.parent().unwrap_or(Path::new(".")).join(file);
                let configuration =
                    read_yaml(&file, &format!("the {name} admission configuration"))?;
                config.insert(name, configuration, file.display().to_string());
            }
            (Value::Null, other) => bail!("{at}.path: expected a file path, got {other}"),
            (configuration, Value::Null) => {
                config.insert(name, configuration.clone(), format!("{at}.configuration"));
            }
            _ => bail!("{at}: give a configuration or a path, not both"),
        }
    }
    Ok(())
}

/// The admission plugin that applies projects' node selectors, and the one setting of
/// `projectConfig` it reads.
const PROJECT_NODE_SELECTOR_PLUGIN: &str = "OriginPodNodeEnvironment";
const DEFAULT_NODE_SELECTOR: &str = "defaultNodeSelector";

/// Hands `projectConfig.defaultNodeSelector` to the project node selector plugin; warns about
/// the `projectConfig` settings berth does not implement.
fn project_config(path: &Path, doc: &Value, config: &mut AdmissionConfig) -> anyhow::Result<()> {
    let project = match &doc["projectConfig"] {
        Value::Null => return Ok(()),
        Value::Object(project) => project,
        other => bail!(
            "{}: projectConfig: expected a map of settings, got {other}",
            path.display()
        ),
    };
    for key in project.keys().filter(|k| *k != DEFAULT_NODE_SELECTOR) {
        tracing::warn!(
            setting = %format!("projectConfig.{key}"),
            "master config setting projectConfig.{key} is not implemented by berth; ignored"
        );
    }
    let Some(selector) = project.get(DEFAULT_NODE_SELECTOR).filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let mut configuration = config
        .configuration(PROJECT_NODE_SELECTOR_PLUGIN)
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    if !configuration.is_object() {
        // The plugin's own configuration is wrong; let the chain report it where it was given.
        return Ok(());
    }
    configuration[DEFAULT_NODE_SELECTOR] = selector.clone();
    config.insert(
        PROJECT_NODE_SELECTOR_PLUGIN,
        configuration,
        format!("{}: projectConfig", path.display()),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{admission_config, admission_configuration, disable_preemption};

    fn read(text: &str) -> anyhow::Result<bool> {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("master-config.yaml");
        std::fs::write(&f, text).unwrap();
        disable_preemption(Some(&f))
    }

    #[test]
    fn reads_the_scheduler_args_shapes() {
        let list =
            "kubernetesMasterConfig:\n  schedulerArgs:\n    disablePreemption:\n    - \"true\"\n";
        assert!(read(list).unwrap());
        assert!(
            read("kubernetesMasterConfig:\n  schedulerArgs:\n    disablePreemption: true\n")
                .unwrap()
        );
        assert!(!read(
            "kubernetesMasterConfig:\n  schedulerArgs:\n    disablePreemption: \"false\"\n"
        )
        .unwrap());
        assert!(!read("kubernetesMasterConfig: {}\n").unwrap());
        assert!(
            read("kubernetesMasterConfig:\n  schedulerArgs:\n    disablePreemption: maybe\n")
                .unwrap_err()
                .to_string()
                .contains("disablePreemption")
        );
        assert!(!disable_preemption(None).unwrap());
    }

    #[test]
    fn reads_admission_plugin_configurations_inline_and_from_a_location() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(
            dir.join("dts.yaml"),
            "defaultNotReadyTolerationSeconds: 60\n",
        )
        .unwrap();
        let master = dir.join("master-config.yaml");
        std::fs::write(
            &master,
            "admissionConfig:\n  pluginConfig:\n    DefaultTolerationSeconds:\n      location: dts.yaml\n    Priority:\n      configuration:\n        kind: DefaultAdmissionConfig\n        apiVersion: v1\n        disable: true\n",
        )
        .unwrap();
        let config = admission_config(Some(&master)).unwrap();
        assert_eq!(
            config.configuration("DefaultTolerationSeconds").unwrap()
                ["defaultNotReadyTolerationSeconds"],
            60
        );
        assert_eq!(config.configuration("Priority").unwrap()["disable"], true);
        assert!(admission_config(None)
            .unwrap()
            .configuration("Priority")
            .is_none());

        std::fs::write(
            &master,
            "admissionConfig:\n  pluginConfig:\n    PodNodeSelector:\n      location: missing.yaml\n",
        )
        .unwrap();
        let e = format!("{:#}", admission_config(Some(&master)).unwrap_err());
        assert!(
            e.contains("PodNodeSelector") && e.contains("missing.yaml"),
            "{e}"
        );
    }

    #[test]
    fn reads_the_project_default_node_selector() {
        let tmp = tempfile::tempdir().unwrap();
        let master = tmp.path().join("master-config.yaml");
        std::fs::write(
            &master,
            "projectConfig:\n  defaultNodeSelector: \"role=app\"\n  projectRequestMessage: hi\n",
        )
        .unwrap();
        let config = admission_config(Some(&master)).unwrap();
        assert_eq!(
            config.configuration("OriginPodNodeEnvironment").unwrap()["defaultNodeSelector"],
            "role=app"
        );
        // An empty default is kept: it means no default.
        std::fs::write(&master, "projectConfig:\n  defaultNodeSelector: \"\"\n").unwrap();
        let config = admission_config(Some(&master)).unwrap();
        assert_eq!(
            config.configuration("OriginPodNodeEnvironment").unwrap()["defaultNodeSelector"],
            ""
        );
        std::fs::write(&master, "projectConfig: [1]\n").unwrap();
        let e = format!("{:#}", admission_config(Some(&master)).unwrap_err());
        assert!(e.contains("projectConfig"), "{e}");
        std::fs::write(&master, "projectConfig: {}\n").unwrap();
        assert!(admission_config(Some(&master))
            .unwrap()
            .configuration("OriginPodNodeEnvironment")
            .is_none());
    }

    #[test]
    fn reads_an_admission_configuration_file() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("admission.yaml");
        std::fs::write(
            tmp.path().join("ps.yaml"),
            "defaults: {enforce: baseline}\n",
        )
        .unwrap();
        std::fs::write(
            &file,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: ps.yaml\n- name: DefaultTolerationSeconds\n  configuration: {defaultNotReadyTolerationSeconds: 5}\n",
        )
        .unwrap();
        let mut config = admission_config(None).unwrap();
        admission_configuration(Some(&file), &mut config).unwrap();
        assert_eq!(
            config.configuration("PodSecurity").unwrap()["defaults"]["enforce"],
            "baseline"
        );
        assert_eq!(
            config.configuration("DefaultTolerationSeconds").unwrap()
                ["defaultNotReadyTolerationSeconds"],
            5
        );
        std::fs::write(&file, "apiVersion: v1\nkind: Config\n").unwrap();
        let e = format!(
            "{:#}",
            admission_configuration(Some(&file), &mut config).unwrap_err()
        );
        assert!(e.contains("expected kind AdmissionConfiguration"), "{e}");
        std::fs::write(
            &file,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- configuration: {}\n",
        )
        .unwrap();
        let e = format!(
            "{:#}",
            admission_configuration(Some(&file), &mut config).unwrap_err()
        );
        assert!(e.contains("plugins[0].name: Required value"), "{e}");
    }
}

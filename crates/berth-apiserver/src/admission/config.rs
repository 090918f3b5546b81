//! Admission configuration in the shape of a master config's `admissionConfig.pluginConfig`:
//! each named plugin's `configuration` object (inline, or read by the caller from the file its
//! `location` names). A configuration with `disable: true` (upstream's `DefaultAdmissionConfig`,
//! `{kind: DefaultAdmissionConfig, apiVersion: v1, disable: true}`) turns the plugin off.

use serde_json::Value;
use std::fmt;

/// The configuration of each plugin a master config names, in the order it names them.
#[derive(Debug, Clone, Default)]
pub struct AdmissionConfig {
    plugins: Vec<PluginConfig>,
}

#[derive(Debug, Clone)]
struct PluginConfig {
    name: String,
    configuration: Value,
    /// Where the configuration was read, for errors: a file and the path of the object in it.
    source: String,
}

impl AdmissionConfig {
    /// Adds the configuration of plugin `name`, read from `source` (e.g. `master-config.yaml:
    /// admissionConfig.pluginConfig.Priority.configuration`); a later one for the same name
    /// replaces it.
    pub fn insert(&mut self, name: &str, configuration: Value, source: String) {
        self.plugins.retain(|p| p.name != name);
        self.plugins.push(PluginConfig {
            name: name.to_string(),
            configuration,
            source,
        });
    }

    /// The configuration of plugin `name`, if one was given.
    pub fn configuration(&self, name: &str) -> Option<&Value> {
        self.find(name).map(|p| &p.configuration)
    }

    fn find(&self, name: &str) -> Option<&PluginConfig> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// Where plugin `name`'s configuration was read.
    fn source(&self, name: &str) -> String {
        self.find(name)
            .map(|p| p.source.clone())
            .unwrap_or_else(|| format!("admissionConfig.pluginConfig.{name}.configuration"))
    }

    /// The configured plugin names berth does not implement, in the order given.
    pub fn unknown_plugins(&self) -> Vec<&str> {
        self.plugins
            .iter()
            .map(|p| p.name.as_str())
            .filter(|name| {
                *name != super::pod_security::PLUGIN
                    && !super::PLUGINS.iter().any(|r| r.name == *name)
            })
            .collect()
    }

    /// Names the source of the plugin's configuration in an error about it.
    pub(super) fn locate(&self, mut error: ConfigError) -> ConfigError {
        error.source = self.source(&error.plugin);
        error
    }
}

/// A configuration berth cannot use: which plugin, which field, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub plugin: String,
    /// The field inside the plugin's configuration (empty for the configuration itself).
    pub field: String,
    pub message: String,
    /// Where the configuration was read (see [`AdmissionConfig::insert`]).
    pub source: String,
}

impl ConfigError {
    pub fn new(plugin: &str, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError {
            plugin: plugin.to_string(),
            field: field.to_string(),
            message: message.into(),
            source: format!("admissionConfig.pluginConfig.{plugin}.configuration"),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            String::new()
        } else {
            format!(".{}", self.field)
        };
        write!(
            f,
            "{}{field}: {} (admission plugin {})",
            self.source, self.message, self.plugin
        )
    }
}

impl std::error::Error for ConfigError {}

/// Fields every configuration may carry besides the plugin's own.
const COMMON_FIELDS: &[&str] = &["apiVersion", "apiversion", "kind", "disable"];

/// Whether the configuration turns the plugin off (`disable: true`).
pub fn disabled(plugin: &str, configuration: &Value) -> Result<bool, ConfigError> {
    let object = configuration
        .as_object()
        .ok_or_else(|| ConfigError::new(plugin, "", "expected an object"))?;
    match object.get("disable") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(ConfigError::new(
            plugin,
            "disable",
            format!("expected true or false, got {other}"),
        )),
    }
}

/// Refuses fields the plugin does not read, so that a misspelt setting is not ignored.
pub fn only_fields(
    plugin: &str,
    configuration: &Value,
    fields: &[&str],
) -> Result<(), ConfigError> {
    let Some(object) = configuration.as_object() else {
        return Err(ConfigError::new(plugin, "", "expected an object"));
    };
    for key in object.keys() {
        if !fields.contains(&key.as_str()) && !COMMON_FIELDS.contains(&key.as_str()) {
            return Err(ConfigError::new(
                plugin,
                key,
                format!("unknown field; {plugin} reads {}", fields.join(", ")),
            ));
        }
    }
    Ok(())
}

/// A whole number of seconds ≥ 0 at `field`, if given.
pub fn seconds(
    plugin: &str,
    configuration: &Value,
    field: &str,
) -> Result<Option<i64>, ConfigError> {
    match configuration.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_i64().filter(|s| *s >= 0).map(Some).ok_or_else(|| {
            ConfigError::new(
                plugin,
                field,
                format!("expected a whole number of seconds, 0 or more, got {v}"),
            )
        }),
    }
}

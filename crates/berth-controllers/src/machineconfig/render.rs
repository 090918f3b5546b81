//! The render controller (upstream `pkg/controller/render`): a pool's MachineConfigs, those
//! its `machineConfigSelector` selects, merge in name order into one configuration; later
//! files of the same path (and units of the same name) replace earlier ones. The result is the
//! MachineConfig `rendered-<pool>-<digest>`, named after its content so that equal content
//! is one object, and it becomes the pool's `spec.configuration`.

use super::IGNITION_VERSION;
use super::{digest, labels_of, name_of, API_VERSION, CONTROLLER_VERSION, GENERATED_BY};
use berth_core::labels::Selector;
use serde_json::{json, Map, Value};

/// A pool's rendered configuration and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// `rendered-<pool>-<digest>`.
    pub name: String,
    /// The rendered MachineConfig to create.
    pub machine_config: Value,
    /// `spec.configuration.source`: the MachineConfigs merged, in order.
    pub source: Vec<Value>,
}

/// Whether `mc` is a rendered configuration (owned by a pool, never selected by one).
pub fn is_rendered(mc: &Value) -> bool {
    name_of(mc).starts_with("rendered-")
}

/// Merges the entries of `list` keyed by `key`, later ones replacing earlier ones in place.
fn merge_by(into: &mut Vec<Value>, list: Option<&Value>, key: &str) {
    for item in list.and_then(Value::as_array).into_iter().flatten() {
        match into.iter_mut().find(|i| i.get(key) == item.get(key)) {
            Some(existing) => *existing = item.clone(),
            None => into.push(item.clone()),
        }
    }
}

/// The configuration `pool` renders from `machine_configs`, or `None` when its selector
/// selects none (the operator then reports the pool `RenderDegraded`).
pub fn render(pool: &Value, machine_configs: &[Value]) -> Option<Rendered> {
    let raw = pool
        .pointer("/spec/machineConfigSelector")
        .cloned()
        .unwrap_or(Value::Null);
    let selector = Selector::from_label_selector(&raw).ok()?;
    if selector.is_nothing() || selector.is_everything() {
        return None;
    }
    let mut selected: Vec<&Value> = machine_configs
        .iter()
        .filter(|mc| !is_rendered(mc) && mc.pointer("/metadata/deletionTimestamp").is_none())
        .filter(|mc| selector.matches(&labels_of(mc)))
        .collect();
    if selected.is_empty() {
        return None;
    }
    selected.sort_by_key(|mc| name_of(mc).to_string());
    let (mut files, mut units, mut kernel_arguments) = (Vec::new(), Vec::new(), Vec::new());
    for mc in &selected {
        merge_by(&mut files, mc.pointer("/spec/config/storage/files"), "path");
        merge_by(&mut units, mc.pointer("/spec/config/systemd/units"), "name");
        for arg in mc
            .pointer("/spec/kernelArguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !kernel_arguments.contains(arg) {
                kernel_arguments.push(arg.clone());
            }
        }
    }
    let mut config = Map::new();
    config.insert("ignition".into(), json!({"version": IGNITION_VERSION}));
    if !files.is_empty() {
        config.insert("storage".into(), json!({"files": files}));
    }
    if !units.is_empty() {
        config.insert("systemd".into(), json!({"units": units}));
    }
    let spec = json!({"config": config, "kernelArguments": kernel_arguments,
                      "extensions": [], "fips": false, "kernelType": "", "osImageURL": ""});
    let pool_name = name_of(pool);
    let name = format!(
        "rendered-{pool_name}-{}",
        digest(&serde_json::to_vec(&spec).unwrap_or_default())
    );
    let source: Vec<Value> = selected
        .iter()
        .map(|mc| json!({"apiVersion": API_VERSION, "kind": "MachineConfig", "name": name_of(mc)}))
        .collect();
    let machine_config = json!({
        "apiVersion": API_VERSION, "kind": "MachineConfig",
        "metadata": {
            "name": name,
            "annotations": {GENERATED_BY: CONTROLLER_VERSION},
            "ownerReferences": [{
                "apiVersion": API_VERSION, "kind": "MachineConfigPool", "name": pool_name,
                "uid": pool.pointer("/metadata/uid").cloned().unwrap_or(json!("")),
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": spec,
    });
    Some(Rendered {
        name,
        machine_config,
        source,
    })
}

/// The pool's `spec.configuration` for `rendered`.
pub fn configuration(rendered: &Rendered) -> Value {
    json!({"name": rendered.name, "source": rendered.source})
}

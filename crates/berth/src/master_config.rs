//! `berth serve --master-config F`: the parts of an OpenShift `master-config.yaml` berth reads.
//!
//! Only `kubernetesMasterConfig.schedulerArgs.disablePreemption` (seed 002 §16.6.6). OpenShift
//! passes scheduler arguments as lists of strings (`disablePreemption: ["true"]`); a plain
//! boolean or string is accepted too. The value is taken literally: `true` disables preemption.

use anyhow::{bail, Context};
use std::path::Path;

/// `disablePreemption` from the file, false without a file or without the setting.
pub fn disable_preemption(path: Option<&Path>) -> anyhow::Result<bool> {
    let Some(path) = path else { return Ok(false) };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading master config {}", path.display()))?;
    let doc: serde_json::Value = serde_saphyr::from_str(&text)
        .with_context(|| format!("parsing master config {}", path.display()))?;
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

#[cfg(test)]
mod tests {
    use super::disable_preemption;

    fn read(text: &str) -> anyhow::Result<bool> {
        let dir = std::env::temp_dir().join(format!("berth-mc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(format!("{:x}.yaml", text.len()));
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
}

//! The admission chain: named plugins that may change or refuse an object on create and update,
//! run in upstream's recommended order, each enabled, disabled or configured by name.
//!
//! The chain is built once at start ([`Chain::build`]) from the `admissionConfig.pluginConfig`
//! of a master config ([`AdmissionConfig`]): a plugin named there with `disable: true` is left
//! out, one named with a configuration is built with it, and every other plugin runs as it does
//! by default. Names berth does not implement are reported with a warning, never ignored quietly.
//!
//! Adding a plugin is one file here that declares its [`Registration`] (name, whether it runs
//! without configuration, how it is built) plus its place in [`PLUGINS`].
//!
//! Defaulting, status reset, immutable fields and validation are not admission: they belong to
//! each kind's strategy (`crate::strategy`), which runs the chain between its steps.

use berth_api::registry::ResourceType;
use berth_store::Store;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod cache;
mod config;
mod default_toleration_seconds;
pub mod dynamic;
mod limit_ranger;
mod namespace_lifecycle;
mod namespace_objects;
mod node_restriction;
mod node_selector;
mod pod_node_constraints;
mod pod_node_selector;
pub mod pod_security;
mod priority;
mod project_node_selector;
mod resource_quota;
mod service_account;

use crate::authorizer::Authorizer;
use crate::error::ApiResult;
use crate::user::UserInfo;
pub use cache::AdmissionCache;
pub use config::{AdmissionConfig, ConfigError};
pub use priority::{
    HIGHEST_USER_DEFINABLE_PRIORITY, SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL,
};

/// Every plugin berth implements, in the order they run: upstream's recommended order
/// (kube-apiserver's `AllOrderedPlugins`). The placement plugins go before Priority, where
/// upstream runs PodNodeSelector: PodNodeConstraints first, so that it judges the node
/// targeting the requester wrote, not the namespace's selectors merged in after it (the seed's
/// developer gets `superregion: us` from the project without asking for it); then the two
/// namespace selectors in OpenShift 3.11's order (PodNodeSelector among kube's plugins,
/// OriginPodNodeEnvironment after them).
/// LimitRanger runs right after NamespaceLifecycle and ResourceQuota last, as upstream orders
/// them, so quota counts the requests and limits LimitRanger defaulted (ResourceQuota checks
/// and charges in its [`Plugin::charge_create`], after validation).
pub const PLUGINS: &[Registration] = &[
    namespace_lifecycle::REGISTRATION,
    limit_ranger::REGISTRATION,
    service_account::REGISTRATION,
    node_restriction::REGISTRATION,
    pod_node_constraints::REGISTRATION,
    pod_node_selector::REGISTRATION,
    project_node_selector::REGISTRATION,
    priority::REGISTRATION,
    default_toleration_seconds::REGISTRATION,
    resource_quota::REGISTRATION,
];

/// A plugin's write that settles a create (ResourceQuota charging its quotas).
pub type Charging<'a> = Pin<Box<dyn Future<Output = ApiResult<()>> + Send + 'a>>;

/// One admission plugin: it may change the object on its way in, or refuse it. A plugin looks
/// at the resource type itself and lets through what it does not handle. `user` is who asks
/// (upstream's `Attributes.GetUserInfo()`).
pub trait Plugin: Send + Sync {
    /// Admission of an object about to be created.
    fn admit_create(
        &self,
        _user: &UserInfo,
        _rt: &ResourceType,
        _obj: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// The last step of a create's admission, after validation and the validating webhooks,
    /// where upstream runs ResourceQuota: a plugin that must write to admit the object (charge
    /// a quota) returns the write; `None` (the default) when it has nothing to write, so the
    /// common case allocates nothing. `dry_run`: check, write nothing.
    fn charge_create<'a>(
        &'a self,
        _rt: &'a ResourceType,
        _obj: &'a Value,
        _dry_run: bool,
    ) -> Option<Charging<'a>> {
        None
    }

    /// Admission of an update of `old` to `new`.
    fn admit_update(
        &self,
        _user: &UserInfo,
        _rt: &ResourceType,
        _old: &Value,
        _new: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Admission of the deletion of `existing` (upstream's DELETE operation), which only
    /// plugins limiting who may act on which object look at.
    fn admit_delete(
        &self,
        _user: &UserInfo,
        _rt: &ResourceType,
        _existing: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Admission of an eviction (`pods/eviction`) of `pod`.
    fn admit_eviction(&self, _user: &UserInfo, _rt: &ResourceType, _pod: &Value) -> ApiResult<()> {
        Ok(())
    }

    /// Admission of a TokenRequest (`serviceaccounts/token` create) for `account` in
    /// `namespace`.
    fn admit_token_request(
        &self,
        _user: &UserInfo,
        _namespace: &str,
        _account: &str,
        _request: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }
}

/// What plugins are built with, as upstream's plugin initializer hands out clients and
/// informers: the store, the decoded-object cache and the server's switches.
#[derive(Clone)]
pub struct Handles {
    pub store: Store,
    pub cache: Arc<AdmissionCache>,
    /// Pod priority switched off (seed 16.6.6): new pods may not name a priority class.
    pub priority_disabled: Arc<AtomicBool>,
    /// The server's authorizer, for plugins that depend on the requester's rights.
    pub authorizer: Arc<dyn Authorizer>,
}

/// How a plugin is built: from the handles and its configuration (`None` without one).
pub type Build = fn(&Handles, Option<&Value>) -> Result<Box<dyn Plugin>, ConfigError>;

/// A plugin berth implements.
pub struct Registration {
    /// The name a master config's `pluginConfig` uses.
    pub name: &'static str,
    /// Whether it runs when the config does not name it (upstream's default-on set).
    pub on_by_default: bool,
    pub build: Build,
}

/// The enabled plugins, in order.
pub struct Chain {
    plugins: Vec<(&'static str, Box<dyn Plugin>)>,
    /// PodSecurity's configuration; `None` when it is disabled. It runs after the mutating
    /// webhooks, as upstream's validating plugin does, so it is not one of `plugins`.
    pub pod_security: Option<pod_security::Config>,
}

impl Chain {
    /// Builds the chain `config` asks for; warns about every plugin name berth does not know.
    pub fn build(handles: &Handles, config: &AdmissionConfig) -> Result<Chain, ConfigError> {
        for name in config.unknown_plugins() {
            tracing::warn!(
                plugin = %name,
                "admission plugin {name} is configured but berth does not implement it; it does not run"
            );
        }
        let mut plugins = Vec::new();
        for registration in PLUGINS {
            let configuration = config.configuration(registration.name);
            let enabled = match configuration {
                Some(c) => !config::disabled(registration.name, c).map_err(|e| config.locate(e))?,
                None => registration.on_by_default,
            };
            if enabled {
                plugins.push((
                    registration.name,
                    (registration.build)(handles, configuration).map_err(|e| config.locate(e))?,
                ));
            }
        }
        let pod_security = match config.configuration(pod_security::PLUGIN) {
            None => Some(pod_security::Config::default()),
            Some(c)
                if config::disabled(pod_security::PLUGIN, c).map_err(|e| config.locate(e))? =>
            {
                None
            }
            Some(c) => Some(pod_security::Config::parse(c).map_err(|e| config.locate(e))?),
        };
        Ok(Chain {
            plugins,
            pod_security,
        })
    }

    /// The names of the enabled plugins, in the order they run.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|(name, _)| *name).collect()
    }

    /// Runs every plugin on an object about to be created; the first refusal wins.
    pub fn admit_create(
        &self,
        user: &UserInfo,
        rt: &ResourceType,
        obj: &mut Value,
    ) -> ApiResult<()> {
        for (_, plugin) in &self.plugins {
            plugin.admit_create(user, rt, obj)?;
        }
        Ok(())
    }

    /// Runs every plugin's last step of a create ([`Plugin::charge_create`]), after
    /// validation; the first refusal wins.
    pub async fn charge_create(
        &self,
        rt: &ResourceType,
        obj: &Value,
        dry_run: bool,
    ) -> ApiResult<()> {
        for (_, plugin) in &self.plugins {
            if let Some(charging) = plugin.charge_create(rt, obj, dry_run) {
                charging.await?;
            }
        }
        Ok(())
    }

    /// Runs every plugin on an update; the first refusal wins.
    pub fn admit_update(
        &self,
        user: &UserInfo,
        rt: &ResourceType,
        old: &Value,
        new: &mut Value,
    ) -> ApiResult<()> {
        for (_, plugin) in &self.plugins {
            plugin.admit_update(user, rt, old, new)?;
        }
        Ok(())
    }

    /// Runs every plugin on a deletion of `existing`; the first refusal wins.
    pub fn admit_delete(
        &self,
        user: &UserInfo,
        rt: &ResourceType,
        existing: &Value,
    ) -> ApiResult<()> {
        for (_, plugin) in &self.plugins {
            plugin.admit_delete(user, rt, existing)?;
        }
        Ok(())
    }

    /// Runs every plugin on a TokenRequest; the first refusal wins.
    pub fn admit_token_request(
        &self,
        user: &UserInfo,
        namespace: &str,
        account: &str,
        request: &Value,
    ) -> ApiResult<()> {
        for (_, plugin) in &self.plugins {
            plugin.admit_token_request(user, namespace, account, request)?;
        }
        Ok(())
    }

    /// Runs every plugin on an eviction of `pod`; the first refusal wins.
    pub fn admit_eviction(&self, user: &UserInfo, rt: &ResourceType, pod: &Value) -> ApiResult<()> {
        for (_, plugin) in &self.plugins {
            plugin.admit_eviction(user, rt, pod)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! What every API client berth makes carries: a User-Agent in upstream's shape
//! (`kube-scheduler/v0.1.0 (linux/amd64) berth`, as client-go's
//! `kube-scheduler/v1.35.0 (linux/amd64) kubernetes/<commit>`), which the API server's access
//! log and audit show, and the count of its requests in `rest_client_requests_total`.

use futures::future::BoxFuture;
use std::sync::Arc;
use std::task::{Context, Poll};

/// `program/v<version> (<os>/<arch>) berth`, with Go's names of the architectures.
pub fn user_agent(program: &str) -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!(
        "{program}/v{} ({}/{arch}) berth",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS
    )
}

/// Sets `program`'s User-Agent on `config` (replacing any other); returns the server's
/// `host:port`, by which its requests are counted.
fn identify(config: &mut kube::Config, program: &str) -> anyhow::Result<String> {
    let host = config
        .cluster_url
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let agent = http::HeaderValue::from_str(&user_agent(program))?;
    config
        .headers
        .retain(|(name, _)| *name != http::header::USER_AGENT);
    config.headers.push((http::header::USER_AGENT, agent));
    Ok(host)
}

/// A client of `config` for `program`: its User-Agent (unless the kubeconfig names one) and
/// its requests counted.
pub fn build(mut config: kube::Config, program: &str) -> anyhow::Result<kube::Client> {
    let host = identify(&mut config, program)?;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&CountedLayer::new(&host))
        .build())
}

/// A client of `config` for `program` that authenticates with `token`'s bearer token as it is
/// at each request (renewed in place by [`berth_controllers::credentials::keep_renewed`]);
/// the credentials `config` names are not used.
pub fn build_with_token(
    mut config: kube::Config,
    program: &str,
    token: berth_controllers::credentials::SharedToken,
) -> anyhow::Result<kube::Client> {
    config.auth_info = kube::config::AuthInfo::default();
    let host = identify(&mut config, program)?;
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&BearerLayer(token))
        .with_layer(&CountedLayer::new(&host))
        .build())
}

/// Sets `Authorization: Bearer <token>` on each request, from the token as it is then.
#[derive(Clone)]
pub struct BearerLayer(berth_controllers::credentials::SharedToken);

impl<S> tower::Layer<S> for BearerLayer {
    type Service = Bearer<S>;
    fn layer(&self, inner: S) -> Bearer<S> {
        Bearer {
            inner,
            token: self.0.clone(),
        }
    }
}

/// The service of [`BearerLayer`].
#[derive(Clone)]
pub struct Bearer<S> {
    inner: S,
    token: berth_controllers::credentials::SharedToken,
}

impl<S, B> tower::Service<http::Request<B>> for Bearer<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        if let Ok(mut value) = http::HeaderValue::from_str(&format!("Bearer {}", self.token.get()))
        {
            value.set_sensitive(true);
            req.headers_mut().insert(http::header::AUTHORIZATION, value);
        }
        self.inner.call(req)
    }
}

/// Counts each request of the service it wraps in `rest_client_requests_total`.
#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    host: Arc<str>,
}

/// The layer of [`Counted`].
#[derive(Clone)]
pub struct CountedLayer {
    host: Arc<str>,
}

impl CountedLayer {
    /// Counts requests to `host`.
    pub fn new(host: &str) -> CountedLayer {
        CountedLayer { host: host.into() }
    }
}

impl<S> tower::Layer<S> for CountedLayer {
    type Service = Counted<S>;
    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            host: self.host.clone(),
        }
    }
}

fn method(m: &http::Method) -> &'static str {
    match *m {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::HEAD => "HEAD",
        _ => "OTHER",
    }
}

impl<S, B, R> tower::Service<http::Request<B>> for Counted<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let method = method(req.method());
        let host = self.host.clone();
        let answer = self.inner.call(req);
        Box::pin(async move {
            let r = answer.await;
            let code = match &r {
                Ok(resp) => resp.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            berth_core::client_metrics::record(&code, &host, method);
            r
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_agent_has_upstreams_shape() {
        let ua = user_agent("kube-scheduler");
        let (program, rest) = ua.split_once('/').unwrap();
        assert_eq!(program, "kube-scheduler");
        assert!(
            rest.starts_with(&format!("v{} (", env!("CARGO_PKG_VERSION"))),
            "{ua}"
        );
        assert!(ua.ends_with(") berth"), "{ua}");
        assert!(!ua.contains("x86_64"), "{ua}");
    }
}

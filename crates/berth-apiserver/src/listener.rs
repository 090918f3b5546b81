//! The HTTPS listener: accepts connections, bounds how long each stage may take and how many
//! connections are open, and hands requests to the router.
//!
//! The bounds are kube-apiserver's secure serving (Go's `http.Server` with
//! `ReadHeaderTimeout: 32s`, `IdleTimeout: 90s`, HTTP/2 `MaxConcurrentStreams: 100`) plus what
//! Go gives it implicitly (back-off on accept errors) and two of berth's own (a TLS handshake
//! deadline, a cap on open connections), so that idle or half-open sockets cannot exhaust the
//! process's file descriptors and lock new clients out.

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, Semaphore};

/// How long a client has to complete the TLS handshake. Go's server bounds it by its read
/// header timeout (32 s); client-go itself gives up after 10 s (`TLSHandshakeTimeout`), so no
/// Kubernetes client is lost at 10 s, and a socket that never speaks is closed three times as
/// fast.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has to send a request's headers, and how long an HTTP/1.1 connection may
/// wait for its next request (hyper's header timer runs while the connection is idle):
/// upstream's `ReadHeaderTimeout`, "just shy of" its 34 s request timeout upper bound.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// How long a connection with no request in progress stays open: upstream's `IdleTimeout`,
/// which matches Go's client keep-alive of idle connections.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Streams one HTTP/2 connection may have open at once (`--http2-max-streams-per-connection`
/// 0): upstream's 100, matching Go's client, so one connection cannot hold a thousand
/// requests.
pub const HTTP2_MAX_STREAMS_PER_CONNECTION: u32 = 100;

/// Connections open at once when the caller names no other cap: beyond it the listener
/// stops accepting (new clients wait in the kernel's backlog) until one closes, so existing
/// connections keep their descriptors and the store keeps its own. `berth serve` derives
/// its cap from the open-file limit instead (`--max-connections`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// How long a connection told to shut down (idle too long) may take to finish before it is
/// dropped: a client that stops reading must not keep it open.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Back-off after a failed accept (EMFILE, ENFILE, ENOBUFS...): Go's `http.Server` waits 5 ms,
/// doubling up to 1 s, so the loop never spins while the process is out of descriptors.
const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// At most one log line per this interval for each kind of connection error (accept, TLS
/// handshake); the others are counted into the next line.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The listener's bounds; [`Default`] is kube-apiserver's (and berth's constants above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub tls_handshake_timeout: Duration,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub http2_max_streams_per_connection: u32,
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            tls_handshake_timeout: TLS_HANDSHAKE_TIMEOUT,
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            http2_max_streams_per_connection: HTTP2_MAX_STREAMS_PER_CONNECTION,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The wait after the `failures`-th accept error in a row (1-based).
fn accept_backoff(failures: u32) -> Duration {
    let doubled = ACCEPT_BACKOFF_FIRST.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    doubled.min(ACCEPT_BACKOFF_MAX)
}

/// Lets one log line through per [`ERROR_LOG_INTERVAL`] and counts the rest.
#[derive(Debug, Default)]
struct LogLimiter {
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl LogLimiter {
    /// Whether to log now, given the time `now`; `Some(n)`: log, saying `n` were suppressed.
    fn allow(&mut self, now: std::time::Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.saturating_duration_since(last) < ERROR_LOG_INTERVAL => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }
}

/// Rate-limited logs of the listener, shared by its connections.
#[derive(Debug, Default)]
struct ErrorLogs {
    accept: std::sync::Mutex<LogLimiter>,
    handshake: std::sync::Mutex<LogLimiter>,
}

impl ErrorLogs {
    fn allow(limiter: &std::sync::Mutex<LogLimiter>) -> Option<u64> {
        let now = berth_core::clock::Stopwatch::now();
        limiter.lock().map_or(None, |mut l| l.allow(now))
    }
}

/// Whether the client opened with plain HTTP (a request line) rather than a TLS handshake,
/// whose first byte is the handshake record type 0x16.
async fn speaks_plain_http(tcp: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(tcp.peek(&mut first).await, Ok(1) if first[0].is_ascii_uppercase())
}

/// Go's TLS server answer to plain HTTP on an HTTPS port, which upstream's API server sends.
async fn answer_plain_http(mut tcp: TcpStream) {
    use tokio::io::AsyncWriteExt;
    let _ = tcp
        .write_all(
            b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n",
        )
        .await;
    let _ = tcp.shutdown().await;
}

/// Requests in progress on one connection, for its idle timer.
#[derive(Default)]
struct Activity {
    active: AtomicUsize,
    /// Woken at each request's start and end.
    changed: Notify,
}

/// Counts a request in progress until its response body is done (or dropped).
struct InProgress(Arc<Activity>);

impl InProgress {
    fn begin(activity: &Arc<Activity>) -> InProgress {
        activity.active.fetch_add(1, Ordering::SeqCst);
        activity.changed.notify_one();
        InProgress(activity.clone())
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_one();
    }
}

/// Serves `router` over TLS on `listener` within `limits` until the process ends.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    config: rustls::ServerConfig,
    limits: ConnectionLimits,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let seats = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let logs = Arc::new(ErrorLogs::default());
    let mut failures = 0u32;
    loop {
        // At the cap, stop accepting: new clients wait in the backlog, open ones go on.
        let Ok(seat) = seats.clone().acquire_owned().await else {
            return;
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => {
                failures = 0;
                c
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let wait = accept_backoff(failures);
                if let Some(suppressed) = ErrorLogs::allow(&logs.accept) {
                    tracing::warn!(error = %e, ?wait, suppressed, "accept failed; retrying");
                }
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let logs = logs.clone();
        tokio::spawn(async move {
            let _seat = seat;
            let handshake = async {
                if speaks_plain_http(&tcp).await {
                    answer_plain_http(tcp).await;
                    return None;
                }
                match acceptor.accept(tcp).await {
                    Ok(tls) => Some(tls),
                    Err(e) => {
                        if let Some(suppressed) = ErrorLogs::allow(&logs.handshake) {
                            tracing::debug!(%peer, error = %e, suppressed, "TLS handshake failed");
                        }
                        None
                    }
                }
            };
            let tls = match tokio::time::timeout(limits.tls_handshake_timeout, handshake).await {
                Ok(Some(tls)) => tls,
                Ok(None) => return,
                Err(_) => {
                    if let Some(suppressed) = ErrorLogs::allow(&logs.handshake) {
                        tracing::debug!(%peer, suppressed, "TLS handshake timed out");
                    }
                    return;
                }
            };
            serve_connection(tls, router, limits).await;
        });
    }
}

/// Serves the requests of one TLS connection: HTTP/2 or HTTP/1.1 as ALPN chose, closed when
/// idle for longer than the limits allow.
async fn serve_connection(
    tls: tokio_rustls::server::TlsStream<TcpStream>,
    router: Router,
    limits: ConnectionLimits,
) {
    // The verified certificate's user travels with every request of the connection.
    let user = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|c| crate::authn::x509::user_of(c.as_ref()))
        .map(crate::authn::CertificateUser);
    let router = match user {
        Some(user) => router.layer(axum::Extension(user)),
        None => router,
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let activity = Arc::new(Activity::default());
    let service = {
        let activity = activity.clone();
        tower::service_fn(move |req: axum::http::Request<hyper::body::Incoming>| {
            let in_progress = InProgress::begin(&activity);
            let router = router.clone();
            async move {
                use http_body_util::BodyExt;
                use tower::ServiceExt;
                let response = router.oneshot(req).await?;
                // The request is in progress until its body (a watch's stream) is done.
                Ok::<_, std::convert::Infallible>(response.map(|body| {
                    axum::body::Body::new(body.map_frame(move |frame| {
                        let _ = &in_progress;
                        frame
                    }))
                }))
            }
        })
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.http2_max_streams_per_connection);
    let builder = if h2 {
        builder.http2_only()
    } else {
        builder.http1_only()
    };
    let connection = builder
        .serve_connection_with_upgrades(TokioIo::new(tls), TowerToHyperService::new(service));
    tokio::pin!(connection);
    // Until the first request, a connection is bounded by the header timeout (an HTTP/2
    // client that never sends its preface); then by the idle timeout between requests.
    let mut idle_limit = limits.header_read_timeout;
    loop {
        let changed = activity.changed.notified();
        let idle = async {
            if activity.active.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(idle_limit).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = changed => idle_limit = limits.idle_timeout,
            () = idle => break,
        }
    }
    connection.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_back_off_from_5ms_doubling_to_1s() {
        let waits: Vec<u64> = (1..=10)
            .map(|n| accept_backoff(n).as_millis() as u64)
            .collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert_eq!(accept_backoff(u32::MAX), ACCEPT_BACKOFF_MAX);
    }

    #[test]
    fn one_error_line_per_interval_counts_the_others() {
        let mut limiter = LogLimiter::default();
        let t0 = berth_core::clock::Stopwatch::now();
        assert_eq!(limiter.allow(t0), Some(0));
        for _ in 0..1000 {
            assert_eq!(limiter.allow(t0 + Duration::from_secs(1)), None);
        }
        assert_eq!(limiter.allow(t0 + ERROR_LOG_INTERVAL), Some(1000));
        assert_eq!(limiter.allow(t0 + ERROR_LOG_INTERVAL), None);
    }

    /// A listener over real sockets with `limits` (short where a test waits for them).
    mod sockets {
        use super::*;
        use std::io::Read;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        struct Served {
            address: std::net::SocketAddr,
            ca_pem: String,
            _dir: tempfile::TempDir,
        }

        async fn listen(limits: ConnectionLimits) -> Served {
            let dir = tempfile::tempdir().expect("tempdir");
            let creds = crate::tls::load_or_create(dir.path(), &[]).expect("credentials");
            let config = crate::tls::server_config(&creds).expect("server config");
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
            let address = listener.local_addr().expect("address");
            let router = Router::new().route("/version", axum::routing::get(|| async { "ok" }));
            tokio::spawn(serve(listener, router, config, limits));
            Served {
                address,
                ca_pem: creds.ca_pem,
                _dir: dir,
            }
        }

        async fn tls_client(
            served: &Served,
            alpn: &[u8],
        ) -> tokio_rustls::client::TlsStream<TcpStream> {
            use rustls::pki_types::pem::PemObject;
            let mut roots = rustls::RootCertStore::empty();
            for ca in rustls::pki_types::CertificateDer::pem_slice_iter(served.ca_pem.as_bytes()) {
                roots.add(ca.expect("ca")).expect("root");
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![alpn.to_vec()];
            let tcp = TcpStream::connect(served.address).await.expect("connect");
            let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
            tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .expect("handshake")
        }

        /// Reads until the server closes the connection; true when it did (EOF or reset),
        /// false when it is still open long after every bound of these tests.
        async fn closed_by_server<S: tokio::io::AsyncRead + Unpin>(mut s: S) -> bool {
            let mut buf = [0u8; 1024];
            let read_to_end = async {
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => continue,
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(30), read_to_end)
                .await
                .is_ok()
        }

        #[tokio::test]
        async fn a_socket_that_never_handshakes_is_closed_after_the_handshake_timeout() {
            let served = listen(ConnectionLimits {
                tls_handshake_timeout: Duration::from_millis(100),
                ..Default::default()
            })
            .await;
            let idle = TcpStream::connect(served.address).await.expect("connect");
            assert!(closed_by_server(idle).await);
            // A slow-loris that sends half a ClientHello is closed the same way.
            let mut partial = TcpStream::connect(served.address).await.expect("connect");
            partial
                .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00])
                .await
                .expect("write");
            assert!(closed_by_server(partial).await);
        }

        #[tokio::test]
        async fn an_http1_client_that_sends_no_request_is_closed_after_the_header_timeout() {
            let served = listen(ConnectionLimits {
                header_read_timeout: Duration::from_millis(100),
                ..Default::default()
            })
            .await;
            let tls = tls_client(&served, b"http/1.1").await;
            assert!(closed_by_server(tls).await);
        }

        #[tokio::test]
        async fn an_http2_connection_is_closed_once_idle_for_the_idle_timeout() {
            let served = listen(ConnectionLimits {
                idle_timeout: Duration::from_millis(100),
                ..Default::default()
            })
            .await;
            let tls = tls_client(&served, b"h2").await;
            let (mut send, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                    .await
                    .expect("h2 handshake");
            let connection = tokio::spawn(connection);
            let req = axum::http::Request::get(format!("https://{}/version", served.address))
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .expect("request");
            let resp = send.send_request(req).await.expect("response");
            assert_eq!(resp.status(), axum::http::StatusCode::OK);
            drop(resp);
            // The server's GOAWAY ends the client's connection task.
            connection.await.expect("joined").expect("closed cleanly");
        }

        #[tokio::test]
        async fn beyond_the_connection_cap_a_new_client_waits_until_a_connection_closes() {
            let served = listen(ConnectionLimits {
                tls_handshake_timeout: Duration::from_millis(200),
                max_connections: 1,
                ..Default::default()
            })
            .await;
            let idle = TcpStream::connect(served.address).await.expect("connect");
            let mut tls = tls_client(&served, b"http/1.1").await;
            tls.write_all(b"GET /version HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
                .await
                .expect("request");
            let mut answer = String::new();
            tls.read_to_string(&mut answer).await.ok();
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            // The second client was served only once the first connection had been closed.
            let mut idle = idle.into_std().expect("std socket");
            let mut buf = [0u8; 1];
            assert!(
                matches!(idle.read(&mut buf), Ok(0) | Err(_)),
                "the idle socket was closed first"
            );
        }
    }
}
